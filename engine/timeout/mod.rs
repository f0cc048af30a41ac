//! Timeout resolution, the pausable deadline and admission gates.
