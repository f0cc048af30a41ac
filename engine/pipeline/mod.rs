//! The call pipeline: one file per stage, the order assembled in one function.
