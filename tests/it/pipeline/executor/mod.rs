//! The executor: scheduling, timeouts, permission, faults, events and stress.

mod events;
mod faults;
mod permission;
mod schedule;
mod stress;
mod timeouts;
