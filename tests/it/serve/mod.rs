//! `toolgate serve`: the JSON-RPC protocol over stdio.

mod client_example;
mod params;
mod slow_client;
mod stdio;
