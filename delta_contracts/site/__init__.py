"""`delta-contracts site`: a static HTML site with a page per table (contract, versions, phases, readers)."""
