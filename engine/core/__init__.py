"""The run's core: transitions, the runner's step protocol, interrupts, fault injection."""
