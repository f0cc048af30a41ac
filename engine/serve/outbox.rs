//! The queue between the engine and the client's stdout, bounded by `engine.serve_queue`.
//!
//! A client that stops reading must not make the server grow without bound. When the queue
//! is full:
//! - a progress event (`ToolCallProgress`) is dropped, and counted per call; the count is
//!   sent as a `progressDropped` notification before the next message that is not progress;
//! - anything else (responses, results and other engine events, permission requests) is
//!   never dropped: the sender waits for room, so the batch waits for the client.
//!
//! Once the writer fails (the client closed stdout) everything is discarded and nobody
//! waits.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Condvar, Mutex, MutexGuard};

use serde_json::{Value, json};

/// The bounded outgoing queue.
pub struct Outbox {
    state: Mutex<State>,
    /// Signalled when an item leaves the queue or the outbox closes.
    room: Condvar,
    /// Signalled when an item arrives or the outbox finishes.
    ready: tokio::sync::Notify,
    capacity: usize,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Value>,
    /// Progress events dropped and not yet reported, per `(batch_id, call_id)`.
    dropped: BTreeMap<(String, String), u64>,
    /// The writer failed: discard everything.
    closed: bool,
    /// No more messages will come: the writer ends once the queue is empty.
    finished: bool,
    /// The most items the queue ever held.
    high_water: usize,
}

impl Outbox {
    /// An outbox holding at most `capacity` messages (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State::default()),
            room: Condvar::new(),
            ready: tokio::sync::Notify::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a consistent queue: keep using it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues a message that must not be dropped, waiting for room while the queue is full.
    /// Progress drops not yet reported are reported first.
    pub fn send(&self, message: Value) {
        let mut state = self.lock();
        loop {
            if state.closed {
                return;
            }
            let Some(((batch_id, call_id), count)) = state.dropped.pop_first() else {
                break;
            };
            let notice = json!({
                "jsonrpc": "2.0",
                "method": "progressDropped",
                "params": {"batch_id": batch_id, "call_id": call_id, "dropped": count},
            });
            state = self.push_waiting(state, notice);
        }
        drop(self.push_waiting(state, message));
    }

    /// Queues a progress event of a call; when the queue is full it is dropped and counted.
    pub fn send_progress(&self, batch_id: &str, call_id: &str, message: Value) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        if state.queue.len() < self.capacity {
            self.push(&mut state, message);
        } else {
            *state
                .dropped
                .entry((batch_id.to_owned(), call_id.to_owned()))
                .or_default() += 1;
        }
    }

    fn push(&self, state: &mut State, message: Value) {
        state.queue.push_back(message);
        state.high_water = state.high_water.max(state.queue.len());
        self.ready.notify_one();
    }

    /// Waits for room, then pushes. Waiting blocks the thread: on a multi-threaded runtime
    /// the worker is handed over first (`block_in_place`) so other tasks — the writer among
    /// them — keep running.
    fn push_waiting<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        message: Value,
    ) -> MutexGuard<'a, State> {
        if state.queue.len() >= self.capacity && !state.closed {
            let wait = |mut state: MutexGuard<'a, State>| {
                while state.queue.len() >= self.capacity && !state.closed {
                    state = self
                        .room
                        .wait(state)
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                }
                state
            };
            let multi_thread = tokio::runtime::Handle::try_current().is_ok_and(|handle| {
                handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread
            });
            state = if multi_thread {
                tokio::task::block_in_place(|| wait(state))
            } else {
                wait(state)
            };
        }
        if !state.closed {
            self.push(&mut state, message);
        }
        state
    }

    /// The next message to write; `None` once finished (or closed) and empty.
    pub async fn next(&self) -> Option<Value> {
        loop {
            {
                let mut state = self.lock();
                if let Some(message) = state.queue.pop_front() {
                    self.room.notify_all();
                    return Some(message);
                }
                if state.closed || state.finished {
                    return None;
                }
            }
            self.ready.notified().await;
        }
    }

    /// No more messages: the writer stops once the queue is written.
    pub fn finish(&self) {
        self.lock().finished = true;
        self.ready.notify_one();
    }

    /// The writer failed: drop what is queued and release every waiting sender.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.queue.clear();
        state.dropped.clear();
        self.room.notify_all();
        self.ready.notify_one();
    }

    /// The most messages the queue ever held.
    pub fn high_water(&self) -> usize {
        self.lock().high_water
    }

    /// Messages queued now.
    pub fn len(&self) -> usize {
        self.lock().queue.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.lock().queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn progress(n: u64) -> Value {
        json!({"method": "event", "params": {"type": "ToolCallProgress", "n": n}})
    }

    #[test]
    fn a_full_queue_drops_progress_and_reports_the_count_before_the_next_message() {
        let outbox = Outbox::new(4);
        for n in 0..1000 {
            outbox.send_progress("b", "c", progress(n));
        }
        assert_eq!(outbox.len(), 4);
        let writer = std::thread::scope(|scope| {
            let sender = scope.spawn(|| outbox.send(json!({"id": 1, "result": {}})));
            // The sender waits for room: two slots (the notice and the result).
            let mut written = Vec::new();
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap();
            while let Some(message) = runtime.block_on(outbox.next()) {
                written.push(message);
                if written.len() == 6 {
                    break;
                }
            }
            sender.join().unwrap();
            written
        });
        assert_eq!(writer.len(), 6, "{writer:?}");
        assert_eq!(writer[3]["params"]["n"], 3);
        assert_eq!(writer[4]["method"], "progressDropped");
        assert_eq!(writer[4]["params"]["dropped"], 996);
        assert_eq!(writer[5]["id"], 1);
        assert_eq!(outbox.high_water(), 4, "the queue never held more than 4");
    }

    #[test]
    fn a_closed_outbox_releases_waiting_senders_and_discards() {
        let outbox = Arc::new(Outbox::new(1));
        outbox.send(json!(1));
        let waiting = {
            let outbox = Arc::clone(&outbox);
            std::thread::spawn(move || outbox.send(json!(2)))
        };
        outbox.close();
        waiting.join().unwrap();
        assert_eq!(outbox.len(), 0);
        outbox.send(json!(3));
        assert_eq!(outbox.len(), 0);
    }
}
