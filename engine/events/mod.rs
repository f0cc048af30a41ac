//! Events streamed while a batch runs, and the sinks that receive them.
