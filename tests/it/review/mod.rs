//! Reviewing policy changes: the shipped policies copied as BASE and HEAD, HEAD edited the
//! way a pull request would, and what `toolgate diff` rates and shows.

mod workflow;
