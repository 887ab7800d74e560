//! Stage 4, validate: inputs and rendered objects against JSON Schemas.
