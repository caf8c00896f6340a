"""The contract: model, loader with located errors, project defaults, Spark types, lint."""
