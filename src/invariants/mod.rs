//! Stage 5, invariants: the topology rules of ADR 007.
