//! The queue between the engine and the client's stdout, bounded by `engine.serve_queue`.
//!
//! A client that stops reading must not make the server grow without bound, and must not
//! keep it from seeing a signal, a `shutdown` or the end of its input. So nothing that
//! sends ever waits:
//! - a progress event (`ToolCallProgress`) is dropped when the queue is full, and counted
//!   per call; the count is sent as a `progressDropped` notification before the next message
//!   that is not progress;
//! - anything else (responses, results and other engine events, permission requests) is
//!   never dropped and always queued.
//!
//! What bounds the queue is the reader: the server reads its next request only while the
//! queue has room ([`Outbox::room`]), and runs at most `engine.serve_batches` batches at
//! once. Past `serve_queue`, the queue holds only what the running batches still send (a
//! fixed number of messages per call) and the answer to the last request read.
//!
//! Once the writer fails (the client closed stdout) everything is discarded.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

use serde_json::{Value, json};
use tokio::sync::Notify;

/// The bounded outgoing queue.
pub struct Outbox {
    state: Mutex<State>,
    /// Signalled when an item leaves the queue or the outbox closes.
    room: Notify,
    /// Signalled when an item arrives or the outbox finishes.
    ready: Notify,
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
}

impl Outbox {
    /// An outbox with room for `capacity` messages (at least 1).
    pub fn new(capacity: usize) -> Self {
        Self {
            state: Mutex::new(State::default()),
            room: Notify::new(),
            ready: Notify::new(),
            capacity: capacity.max(1),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves a consistent queue: keep using it.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues a message that must not be dropped, full or not. Progress drops not yet
    /// reported are reported first.
    pub fn send(&self, message: Value) {
        let mut state = self.lock();
        if state.closed {
            return;
        }
        while let Some(((batch_id, call_id), count)) = state.dropped.pop_first() {
            let notice = json!({
                "jsonrpc": "2.0",
                "method": "progressDropped",
                "params": {"batch_id": batch_id, "call_id": call_id, "dropped": count},
            });
            self.push(&mut state, notice);
        }
        self.push(&mut state, message);
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
        self.ready.notify_one();
    }

    /// Waits until the queue has room (or the outbox is closed): the reader calls this
    /// before taking the next request, so a client that does not read stops being read.
    pub async fn room(&self) {
        loop {
            let notified = self.room.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the check, so a message written in between is not missed.
            notified.as_mut().enable();
            {
                let state = self.lock();
                if state.closed || state.queue.len() < self.capacity {
                    return;
                }
            }
            notified.await;
        }
    }

    /// The next message to write; `None` once finished (or closed) and empty.
    pub async fn next(&self) -> Option<Value> {
        loop {
            {
                let mut state = self.lock();
                if let Some(message) = state.queue.pop_front() {
                    self.room.notify_waiters();
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

    /// The writer failed: drop what is queued and release the reader.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.queue.clear();
        state.dropped.clear();
        self.room.notify_waiters();
        self.ready.notify_one();
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
    use futures::FutureExt;

    fn progress(n: u64) -> Value {
        json!({"method": "event", "params": {"type": "ToolCallProgress", "n": n}})
    }

    #[tokio::test]
    async fn a_full_queue_drops_progress_and_reports_the_count_before_the_next_message() {
        let outbox = Outbox::new(4);
        for n in 0..1000 {
            outbox.send_progress("b", "c", progress(n));
        }
        assert_eq!(outbox.len(), 4);
        // A message that is not progress is queued at once, full or not, after the notice.
        outbox.send(json!({"id": 1, "result": {}}));
        assert_eq!(outbox.len(), 6);
        outbox.finish();
        let mut written = Vec::new();
        while let Some(message) = outbox.next().await {
            written.push(message);
        }
        assert_eq!(written.len(), 6, "{written:?}");
        assert_eq!(written[3]["params"]["n"], 3);
        assert_eq!(written[4]["method"], "progressDropped");
        assert_eq!(written[4]["params"]["dropped"], 996);
        assert_eq!(written[5]["id"], 1);
    }

    #[tokio::test]
    async fn the_reader_waits_for_room_until_a_message_is_written_or_the_outbox_closes() {
        let outbox = Outbox::new(2);
        assert!(
            outbox.room().now_or_never().is_some(),
            "an empty queue has room"
        );
        outbox.send(json!(1));
        outbox.send(json!(2));
        outbox.send(json!(3));
        let waiting = outbox.room();
        let mut waiting = std::pin::pin!(waiting);
        assert!(
            waiting.as_mut().now_or_never().is_none(),
            "a full queue has no room"
        );
        assert_eq!(outbox.next().await, Some(json!(1)));
        assert!(
            waiting.as_mut().now_or_never().is_none(),
            "still full: 2 of 2"
        );
        assert_eq!(outbox.next().await, Some(json!(2)));
        assert!(
            waiting.now_or_never().is_some(),
            "room after a message left"
        );
        outbox.send(json!(4));
        outbox.send(json!(5));
        let waiting = outbox.room();
        let mut waiting = std::pin::pin!(waiting);
        assert!(waiting.as_mut().now_or_never().is_none());
        outbox.close();
        assert!(
            waiting.now_or_never().is_some(),
            "closing releases the reader"
        );
        assert!(outbox.is_empty());
        outbox.send(json!(6));
        assert!(outbox.is_empty(), "a closed outbox discards");
    }
}
