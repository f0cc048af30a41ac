//! The command-line interface: one library function per command returning a report; the
//! binary (`main.rs`) parses arguments, calls it, renders and maps to an exit code.
