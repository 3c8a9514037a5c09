"""The market's state transitions: declarations, jobs, windows, holds, the spend guard, ticks."""
