"""RocketMQ's client side as library code the simulator drives: producer, push consumer, offset stores."""
