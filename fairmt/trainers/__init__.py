"""Layer 4: one Config + Trainer per method (import the module you need: ``fairmt.trainers.gacl``, ...)."""
