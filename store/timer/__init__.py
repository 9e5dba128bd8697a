"""The 5.x timer wheel (RIP-43): TimerMessageStore with its TimerWheel, TimerLog and TimerCheckpoint."""
