"""What delta-contracts keeps of its own runs: the apply ledger, the state tables it is stored in,
and the leases that keep two runners off one table."""
