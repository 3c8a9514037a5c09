"""The record (docs/history.md): checking every recorded tick against a re-run of the engine
(`verify`), and re-running a recorded period with a strategy's bids (`backtest`)."""
