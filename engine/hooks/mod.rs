//! Hooks: external commands run at lifecycle points, and their JSON protocol.
