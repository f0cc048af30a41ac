//! Rule-level permission and approval.

mod approval;
mod rules;
mod staged;
