//! One turn as a run ([`crate::live::runs`]), the same for both chat protocols: the native one
//! (`POST {prefix}/api/chat`, [`super::native`]) and the AI SDK's (`POST
//! {prefix}/api/aisdk/chat`, `crate::aisdk::chat`). Each hands over its **loop driver** (a
//! stream of events: the host's one model call for the native protocol, whose tools run in the
//! browser; the server-side agent loop for the AI SDK) and its **encoder** (an [`Encoder`]:
//! what each event writes to the run's log, and the reply it adds up to). [`start`] does the
//! rest, once for both: it starts the run, relays the driver's events through the encoder,
//! flushes the first token at once, saves the reply as the run goes and when it ends, and
//! handles a stop.
//!
//! Decisions:
//! - **The run goes on without its client.** A client that leaves stops nothing; only a stop
//!   request ends the run early: it drops the driver (the upstream request and any running tool
//!   call with it), the encoder writes what a stopped reply ends with, and the reply so far is
//!   saved, marked stopped.
//! - **The first model output goes out with the response's head** (see `runs::launch`): the
//!   frame that holds it is flushed at once, and the preamble an encoder writes before it
//!   (the AI SDK's `start`) waits for it.
//! - **Saves go through one [`Saver`]** per run, off the reply's path: when the encoder says a
//!   step settled (the AI SDK: a step that ran tools, the finish), at least once a second while
//!   events arrive with a shared engine ([`Runs::checkpoint_every`]), and at the end, before the
//!   log ends, so a reload right after the reply finds it. What a save holds is the encoder's
//!   ([`Encoder::snapshot`]): the native protocol saves the reply in its place, the AI SDK the
//!   whole thread.
//! - **The span of the caller is the run's**, entered once per poll of the run's task, not per
//!   event: a poll relays every event that has arrived, and each entry and exit of a span goes
//!   through the subscriber (its span stack; with a span-tracking filter, a lock too, see
//!   `logs`). Entered per event (as a stream adapter), a turn with history cost 1.4% more
//!   instructions (callgrind, 1,000 turns: 1.036 M against 1.022 M a turn).

use futures_util::{Stream, StreamExt};
use serde_json::Value;
use tracing::Instrument;

use crate::error::Failure;
use crate::host::Principal;
use crate::live::runs::saver::{Saver, Snapshot, Target};
use crate::live::runs::{self, Run, RunStatus, RunWriter, Runs};

/// What one event meant for the run, as its encoder wrote it.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Step {
    /// The event was the model's output (not a preamble): the first one is flushed at once.
    pub(crate) output: bool,
    /// A step settled: save the reply now.
    pub(crate) settle: bool,
    /// The turn ended here, whether or not the driver's stream does.
    pub(crate) end: bool,
}

/// How one chat protocol writes a turn: the frames each event puts in the run's log, and the
/// reply they add up to.
pub(crate) trait Encoder: Send + 'static {
    /// What the loop driver emits.
    type Event: Send + 'static;

    /// Writes what comes before the first event (the run's id is known now).
    fn start(&mut self, run_id: &str, log: &RunWriter);

    /// Writes one event.
    fn push(&mut self, event: Self::Event, log: &RunWriter) -> Step;

    /// Writes what a stopped reply ends with, and marks the reply stopped.
    fn stop(&mut self, log: &RunWriter);

    /// The reply so far as a save, or `None` when there is nothing worth saving yet.
    fn snapshot(&self) -> Option<Snapshot>;

    /// Writes the log's last frames, after the last save; `revision` is what that save left
    /// (`None` without history, or when nothing was saved).
    fn end(&mut self, revision: Option<u64>, log: &RunWriter);
}

/// A run about to start: who owns it, what it writes, and what its log says if its instance
/// is lost.
pub(crate) struct NewRun<'a> {
    pub(crate) owner: &'a Principal,
    /// The conversation the reply goes into (taken for the run), if any.
    pub(crate) conversation: Option<&'a str>,
    /// The reply's message id.
    pub(crate) message_id: &'a str,
    /// The message the run continues, as it was before (what a resume starts from).
    pub(crate) resume_base: Option<Value>,
    /// The frames that end the log when the instance running it is lost.
    pub(crate) lost: &'a [String],
    /// Where the reply is saved, when it is.
    pub(crate) save: Option<Target>,
}

/// Starts `new` (a 409 while another run writes its conversation) and runs it in a task that
/// relays `driver` through `encoder` and holds `hold` until the run ends, in the caller's span.
pub(crate) async fn start<E: Encoder>(
    runs: &Runs,
    new: NewRun<'_>,
    driver: impl Stream<Item = E::Event> + Send + 'static,
    mut encoder: E,
    hold: impl Send + 'static,
) -> Result<Run, Failure> {
    let writer = runs
        .start(
            new.owner,
            new.conversation,
            new.message_id,
            new.resume_base,
            new.lost,
        )
        .await?;
    let run = writer.run();
    let checkpoint_every = runs.checkpoint_every();
    let target = new.save;
    let task = async move {
        let _hold = hold;
        let saver = target.map(Saver::start);
        let save = |encoder: &E| {
            if let (Some(saver), Some(snapshot)) = (&saver, encoder.snapshot()) {
                saver.save(snapshot);
            }
        };
        // The conversation holds the request before the first token (when the encoder has
        // something to save yet).
        save(&encoder);
        encoder.start(writer.id(), &writer);
        let mut driver = std::pin::pin!(driver);
        let relay = async {
            let mut checkpoint = Checkpoint::new(checkpoint_every);
            let mut flushed = false;
            while let Some(ev) = driver.next().await {
                let step = encoder.push(ev, &writer);
                if step.output && !flushed {
                    writer.flush_now();
                    flushed = true;
                }
                if step.end {
                    break;
                }
                if step.settle || checkpoint.due() {
                    save(&encoder);
                }
            }
        };
        let status = tokio::select! {
            _ = relay => RunStatus::Finished,
            _ = writer.stopped() => RunStatus::Stopped,
        };
        if status == RunStatus::Stopped {
            tracing::debug!(run = %writer.id(), "the run was stopped");
            encoder.stop(&writer);
        }
        save(&encoder);
        // A store that is away (restarting) holds the save, not the reply's end.
        let revision = match &saver {
            Some(saver) => match tokio::time::timeout(SAVE_WAIT, saver.flush()).await {
                Ok(revision) => revision,
                Err(_) => {
                    tracing::warn!(run = %writer.id(), "the reply's save waits for the history store; the run ends first");
                    None
                }
            },
            None => None,
        };
        encoder.end(revision, &writer);
        writer.finish(status).await;
    };
    runs::launch(&run, task.instrument(tracing::Span::current())).await;
    Ok(run)
}

/// How long a run's end waits for its reply's save (the saver goes on trying after it, while
/// the history store is away).
const SAVE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The error that ends a run's log when the instance running it is lost.
pub(crate) const LOST: &str = "the server running this reply stopped; the reply so far is saved";

/// When a run saves its reply so far: at most once per interval, while new events arrive.
pub(crate) struct Checkpoint {
    every: Option<std::time::Duration>,
    last: tokio::time::Instant,
}

impl Checkpoint {
    pub(crate) fn new(every: Option<std::time::Duration>) -> Self {
        Self {
            every,
            last: tokio::time::Instant::now(),
        }
    }

    /// Whether a save is due now (then the next one is an interval away).
    pub(crate) fn due(&mut self) -> bool {
        match self.every {
            Some(every) if self.last.elapsed() >= every => {
                self.last = tokio::time::Instant::now();
                true
            }
            _ => false,
        }
    }
}
