"""The broker around the store: topics, groups, offsets, send/pull/send-back processing."""
