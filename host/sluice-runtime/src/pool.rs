//! The threads tool calls run on.
//!
//! Guest code and the blocking file operations of WASI (`allow_blocking_current_thread`,
//! which makes file calls about 4× faster) must not run on the caller's async runtime: in
//! `sluice serve` two guests spinning to their timeout would otherwise hold both of the
//! API's worker threads and `/healthz` would wait for them. So every call runs on a
//! [`CallPool`]: OS threads, each with a current-thread tokio runtime of its own, fed by a
//! channel; the caller only awaits the result (a cross-thread wake each way). A thread that
//! finished a call spins for 100 µs before it sleeps, so that calls that follow one another
//! do not each pay for waking it (tens of µs on an idle virtual machine); when its last call
//! came after longer than that, it sleeps at once instead (a client calling every few
//! hundred µs, as over MCP, would only have it burn a core between calls).
//!
//! - **Slots.** At most `max_concurrent_calls` calls run at once (`runtime.max_concurrent_calls`,
//!   default [`default_max_concurrent_calls`]). A call waits at most `queue_timeout`
//!   (`runtime.queue_timeout_ms`, default [`DEFAULT_QUEUE_TIMEOUT_MS`]) for a slot, then fails
//!   with [`PoolError::Busy`].
//! - **Threads** are started when calls need them, up to one per slot, and then stay. A
//!   call that leaves tasks on its thread's runtime (its `wasi:http` requests, aborted when
//!   its store is dropped) has them dropped, and their sockets closed, before its caller
//!   hears of the result; a task that still lives then is dropped with the runtime, and
//!   the thread goes on with a new one.
//! - **Stuck threads.** A call ends at its deadline whatever the guest waits on: the call
//!   itself stops guest code (the epoch callback) and drops its future when the guest waits
//!   inside the host (a sleep, a poll). Only a thread blocked in a system call that does not
//!   return (a file on a hung network mount) cannot stop; its caller stops waiting
//!   [`WATCHDOG_GRACE`] after the deadline ([`PoolError::Stuck`]), the thread is left to
//!   finish on its own and then retires, and a new thread takes its slot. At most
//!   [`MAX_STUCK_THREADS`] threads are left that way; past that, a stuck call keeps its slot
//!   until its thread returns.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tokio_util::sync::CancellationToken;

pub use sluice_protocol::limits::{
    DEFAULT_QUEUE_TIMEOUT_MS, MAX_MAX_CONCURRENT_CALLS, default_max_concurrent_calls,
};

/// What a call cancelled while it ran says, whether the call stopped itself or its caller
/// stopped waiting for it.
pub const CANCELLED_WHILE_RUNNING: &str = "the call was cancelled before the tool finished (its run was cancelled); it may have done part of its work";

/// The most threads left blocked in a system call at once (see the module docs); each holds
/// an instance of the pooling allocator and its descriptors until it returns.
pub const MAX_STUCK_THREADS: usize = 16;

/// How long after a call's timeout its caller stops waiting for a thread that does not
/// answer (stuck in a system call, or not scheduled on an overloaded machine). With the
/// epoch tick (10 ms) this keeps every call within its timeout plus 200 ms.
pub const WATCHDOG_GRACE: Duration = Duration::from_millis(150);

/// How long a cancelled call's caller waits for the call to confirm that it stopped before
/// treating its thread as stuck. Stopping takes microseconds: dropping a future.
const CANCEL_GRACE: Duration = Duration::from_millis(50);

/// Why the pool did not return a call's result.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PoolError {
    /// Every slot stayed taken for the whole queue timeout.
    #[error(
        "no slot for this call: all {max_calls} tool-call slots (runtime.max_concurrent_calls = {max_calls}) stayed busy for {queue_timeout_ms} ms (runtime.queue_timeout_ms = {queue_timeout_ms}){}; try again later, or raise runtime.max_concurrent_calls",
        held_by_stuck_note(*.held_by_stuck)
    )]
    Busy {
        /// `runtime.max_concurrent_calls`.
        max_calls: usize,
        /// `runtime.queue_timeout_ms`.
        queue_timeout_ms: u64,
        /// Slots held by calls whose threads are stuck in a system call.
        held_by_stuck: usize,
    },
    /// The call was cancelled: before it started, or while it waited for a slot (`running`
    /// false), or while it ran. The message is the one the call itself gives when it stops
    /// ([`CANCELLED_WHILE_RUNNING`]), whichever side sees the cancellation first.
    #[error("{}", if *.running { CANCELLED_WHILE_RUNNING } else { "the call was cancelled before it started" })]
    Cancelled {
        /// The call had started.
        running: bool,
    },
    /// The call's thread did not answer by the deadline: it is blocked in a system call (or
    /// was not scheduled in time).
    #[error(
        "the call's thread did not stop at the deadline (it is blocked in a system call, such as a read from a hung network file system, or the machine is too busy to run it); it was left to finish on its own ({stuck} of at most {max_stuck} such threads){}",
        if *.replaced { "" } else { " and keeps its call slot until it returns" }
    )]
    Stuck {
        /// Threads left blocked and replaced, this one included when `replaced`.
        stuck: usize,
        /// The most that may be (the pool's `max_stuck_threads`).
        max_stuck: usize,
        /// A new thread took its slot (else the limit was reached and it keeps its slot).
        replaced: bool,
    },
    /// A thread could not be started.
    #[error("could not start a thread for the call: {0}")]
    Thread(String),
    /// The call's thread ended without a result (a panic in the host).
    #[error("the call's thread ended without a result")]
    Lost,
}

fn held_by_stuck_note(n: usize) -> String {
    match n {
        0 => String::new(),
        n => format!(", {n} of them held by calls stuck in a system call"),
    }
}

/// How the pool is sized.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolOptions {
    /// Calls that may run at once (1 to [`MAX_MAX_CONCURRENT_CALLS`]; default
    /// [`default_max_concurrent_calls`]).
    pub max_concurrent_calls: usize,
    /// How long a call waits for a slot (default [`DEFAULT_QUEUE_TIMEOUT_MS`]).
    pub queue_timeout: Duration,
    /// The most threads left blocked in a system call and replaced (default
    /// [`MAX_STUCK_THREADS`]).
    pub max_stuck_threads: usize,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            max_concurrent_calls: default_max_concurrent_calls(),
            queue_timeout: Duration::from_millis(DEFAULT_QUEUE_TIMEOUT_MS),
            max_stuck_threads: MAX_STUCK_THREADS,
        }
    }
}

/// What a worker does after a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum JobEnd {
    /// Take the next job.
    Serve,
    /// Exit: the thread was replaced while it was stuck.
    Retire,
}

type Job = Box<dyn FnOnce(&tokio::runtime::Runtime) -> JobEnd + Send>;

/// A bounded pool of call threads; see the module docs.
pub struct CallPool {
    shared: Arc<Shared>,
    sender: mpsc::Sender<Job>,
}

impl std::fmt::Debug for CallPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallPool")
            .field("options", &self.shared.options)
            .field("threads", &self.shared.live.load(Ordering::Relaxed))
            .field("stuck", &self.shared.stuck.load(Ordering::Relaxed))
            .finish()
    }
}

struct Shared {
    options: PoolOptions,
    receiver: Mutex<mpsc::Receiver<Job>>,
    slots: Arc<Semaphore>,
    /// Threads serving jobs (stuck ones that were replaced are not counted).
    live: AtomicUsize,
    /// Threads left blocked and replaced, not yet returned.
    stuck: AtomicUsize,
    /// Slots held by stuck calls that could not be replaced.
    held_by_stuck: AtomicUsize,
}

/// One call's claim on a slot, shared by its caller and its thread.
struct Ticket {
    state: Mutex<TicketState>,
}

enum TicketState {
    Running(OwnedSemaphorePermit),
    Finished,
    /// The caller stopped waiting; `Some(permit)` when the thread was not replaced.
    Abandoned(Option<OwnedSemaphorePermit>),
}

impl Ticket {
    fn lock(&self) -> std::sync::MutexGuard<'_, TicketState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Ends a ticket on the worker's side: what the thread does next.
fn finish(ticket: &Ticket, shared: &Shared) -> JobEnd {
    let mut state = ticket.lock();
    match std::mem::replace(&mut *state, TicketState::Finished) {
        TicketState::Running(_) | TicketState::Finished => JobEnd::Serve,
        TicketState::Abandoned(Some(_)) => {
            shared.held_by_stuck.fetch_sub(1, Ordering::Relaxed);
            JobEnd::Serve
        }
        TicketState::Abandoned(None) => {
            shared.stuck.fetch_sub(1, Ordering::Relaxed);
            JobEnd::Retire
        }
    }
}

impl CallPool {
    /// A pool sized by `options`; threads start on demand.
    pub fn new(options: PoolOptions) -> CallPool {
        let (sender, receiver) = mpsc::channel();
        let max = options
            .max_concurrent_calls
            .clamp(1, MAX_MAX_CONCURRENT_CALLS);
        CallPool {
            shared: Arc::new(Shared {
                options: PoolOptions {
                    max_concurrent_calls: max,
                    ..options
                },
                receiver: Mutex::new(receiver),
                slots: Arc::new(Semaphore::new(max)),
                live: AtomicUsize::new(0),
                stuck: AtomicUsize::new(0),
                held_by_stuck: AtomicUsize::new(0),
            }),
            sender,
        }
    }

    /// How the pool is sized.
    pub fn options(&self) -> PoolOptions {
        self.shared.options
    }

    /// Threads left blocked in a system call (replaced), not yet returned.
    pub fn stuck_threads(&self) -> usize {
        self.shared.stuck.load(Ordering::Relaxed)
    }

    /// Runs `call` on a pool thread and returns its output. `call` is given a token that
    /// fires when `cancel` does or this future is dropped; it must stop promptly when it
    /// fires, and on its own at `deadline` after it starts. The caller stops waiting
    /// [`WATCHDOG_GRACE`] after `deadline`, and on `cancel` once the call confirms (or
    /// after a short grace).
    ///
    /// # Errors
    /// [`PoolError`]: no slot within the queue timeout, cancelled, a thread stuck past the
    /// deadline, a thread that cannot start or that ended without a result.
    pub async fn run<F, Fut, T>(
        &self,
        cancel: &CancellationToken,
        deadline: Duration,
        call: F,
    ) -> Result<T, PoolError>
    where
        F: FnOnce(CancellationToken) -> Fut + Send + 'static,
        Fut: Future<Output = T>,
        T: Send + 'static,
    {
        if cancel.is_cancelled() {
            return Err(PoolError::Cancelled { running: false });
        }
        let permit = self.slot(cancel).await?;
        let ticket = Arc::new(Ticket {
            state: Mutex::new(TicketState::Running(permit)),
        });
        let token = cancel.child_token();
        let (tx, mut rx) = oneshot::channel();
        let job: Job = {
            let ticket = ticket.clone();
            let shared = self.shared.clone();
            let token = token.clone();
            Box::new(move |runtime: &tokio::runtime::Runtime| {
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    runtime.block_on(call(token))
                }));
                // Before the caller hears of it: what the call opened is closed by then.
                settle(runtime);
                // The slot is free before the caller hears of it, so a caller that calls
                // again at once finds it free.
                let end = finish(&ticket, &shared);
                match out {
                    Ok(out) => {
                        let _ = tx.send(out);
                    }
                    // The caller sees the sender dropped: `PoolError::Lost`.
                    Err(_) => tracing::error!("a tool call panicked on its thread"),
                }
                end
            })
        };
        if let Err(e) = self.ensure_threads() {
            // Nothing runs this job: give its slot back.
            *ticket.lock() = TicketState::Finished;
            return Err(e);
        }
        if self.sender.send(job).is_err() {
            *ticket.lock() = TicketState::Finished;
            return Err(PoolError::Lost);
        }
        // Dropping this future (its caller gave up) stops the call too.
        let _stop_on_drop = token.clone().drop_guard();
        tokio::select! {
            biased;
            out = &mut rx => out.map_err(|_| PoolError::Lost),
            () = cancel.cancelled() => {
                match tokio::time::timeout(CANCEL_GRACE, &mut rx).await {
                    Ok(Ok(out)) => Ok(out),
                    _ => {
                        self.abandon(&ticket);
                        Err(PoolError::Cancelled { running: true })
                    }
                }
            }
            () = tokio::time::sleep(deadline + WATCHDOG_GRACE) => {
                // One last look: the result may have come as the timer fired.
                match rx.try_recv() {
                    Ok(out) => Ok(out),
                    Err(_) => Err(self.abandon(&ticket)),
                }
            }
        }
    }

    /// Takes a slot: at once when one is free, else within the queue timeout.
    async fn slot(&self, cancel: &CancellationToken) -> Result<OwnedSemaphorePermit, PoolError> {
        if let Ok(permit) = self.shared.slots.clone().try_acquire_owned() {
            return Ok(permit);
        }
        let options = self.shared.options;
        tokio::select! {
            biased;
            () = cancel.cancelled() => Err(PoolError::Cancelled { running: false }),
            waited = tokio::time::timeout(options.queue_timeout, self.shared.slots.clone().acquire_owned()) => {
                match waited {
                    Ok(Ok(permit)) => Ok(permit),
                    // The semaphore is never closed; a closed one means no slot either.
                    Ok(Err(_)) | Err(_) => Err(PoolError::Busy {
                        max_calls: options.max_concurrent_calls,
                        queue_timeout_ms: options.queue_timeout.as_millis() as u64,
                        held_by_stuck: self.shared.held_by_stuck.load(Ordering::Relaxed),
                    }),
                }
            }
        }
    }

    /// Starts threads until there is one for every call holding a slot.
    fn ensure_threads(&self) -> Result<(), PoolError> {
        let max = self.shared.options.max_concurrent_calls;
        let busy = max - self.shared.slots.available_permits();
        loop {
            let live = self.shared.live.load(Ordering::Acquire);
            if live >= busy {
                return Ok(());
            }
            if self
                .shared
                .live
                .compare_exchange(live, live + 1, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                continue;
            }
            let shared = self.shared.clone();
            let spawned = std::thread::Builder::new()
                .name("sluice-call".into())
                .spawn(move || serve(shared));
            if let Err(e) = spawned {
                self.shared.live.fetch_sub(1, Ordering::AcqRel);
                return Err(PoolError::Thread(e.to_string()));
            }
        }
    }

    /// The caller stops waiting for a call that did not answer: its thread is replaced when
    /// fewer than [`MAX_STUCK_THREADS`] are stuck, else it keeps its slot.
    fn abandon(&self, ticket: &Ticket) -> PoolError {
        let mut state = ticket.lock();
        match std::mem::replace(&mut *state, TicketState::Finished) {
            TicketState::Running(permit) => {
                let shared = &self.shared;
                let max_stuck = shared.options.max_stuck_threads;
                let stuck = shared.stuck.load(Ordering::Relaxed);
                if stuck < max_stuck {
                    shared.stuck.fetch_add(1, Ordering::Relaxed);
                    shared.live.fetch_sub(1, Ordering::AcqRel);
                    *state = TicketState::Abandoned(None);
                    drop(permit);
                    tracing::warn!(
                        stuck = stuck + 1,
                        "a tool call's thread is blocked in a system call; replaced it"
                    );
                    PoolError::Stuck {
                        stuck: stuck + 1,
                        max_stuck,
                        replaced: true,
                    }
                } else {
                    shared.held_by_stuck.fetch_add(1, Ordering::Relaxed);
                    *state = TicketState::Abandoned(Some(permit));
                    tracing::warn!(
                        stuck,
                        "a tool call's thread is blocked in a system call; the most are already, so it keeps its slot"
                    );
                    PoolError::Stuck {
                        stuck,
                        max_stuck,
                        replaced: false,
                    }
                }
            }
            // It finished as the caller gave up: nothing is stuck.
            other => {
                *state = other;
                PoolError::Stuck {
                    stuck: self.shared.stuck.load(Ordering::Relaxed),
                    max_stuck: self.shared.options.max_stuck_threads,
                    replaced: true,
                }
            }
        }
    }
}

/// The most rounds of its runtime [`settle`] runs after a call; each drops up to 61 of the
/// tasks the call left (tokio's event interval), so 1,024 rounds drop more than a call's
/// 10,000 resources could hold.
const MAX_SETTLE_ROUNDS: usize = 1024;

/// Runs `runtime` until the tasks a call left on it are gone: they were aborted when the
/// call's store was dropped (each `wasi:http` request and connection is one), and a task is
/// dropped, with its socket, only when the runtime runs it again. At most
/// [`MAX_SETTLE_ROUNDS`] rounds; what is still alive then goes with the runtime
/// ([`serve`]).
fn settle(runtime: &tokio::runtime::Runtime) {
    let metrics = runtime.metrics();
    if metrics.num_alive_tasks() == 0 {
        return;
    }
    runtime.block_on(async {
        for _ in 0..MAX_SETTLE_ROUNDS {
            if metrics.num_alive_tasks() == 0 {
                return;
            }
            tokio::task::yield_now().await;
        }
    });
}

/// A pool thread: takes jobs until the pool is dropped or it is retired.
fn serve(shared: Arc<Shared>) {
    let new_runtime = || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .inspect_err(|e| {
                tracing::error!(error = %e, "could not start a tool-call thread's runtime");
                shared.live.fetch_sub(1, Ordering::AcqRel);
            })
            .ok()
    };
    let Some(mut runtime) = new_runtime() else {
        return;
    };
    let mut spin = SPIN_BEFORE_SLEEP;
    loop {
        let job = {
            let receiver = shared
                .receiver
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            next_job(&receiver, spin)
        };
        let Ok((job, waited)) = job else { return };
        spin = spin_after(waited);
        if job(&runtime) == JobEnd::Retire {
            return;
        }
        // Tasks a call left that `settle` could not drop go with the runtime, now: no
        // socket a call opened outlives it.
        if runtime.metrics().num_alive_tasks() > 0 {
            runtime.shutdown_background();
            let Some(fresh) = new_runtime() else { return };
            runtime = fresh;
        }
    }
}

/// How long a call thread that finished a call looks for the next before it sleeps. Waking
/// a sleeping thread costs tens of µs on a virtual machine whose CPU went idle (about 45 µs
/// each way on a 2-core VM); calls that follow one another (paging through a file) find the
/// thread awake instead, for at most this much spinning after each call.
const SPIN_BEFORE_SLEEP: Duration = Duration::from_micros(100);

/// How long to spin before the next wait, given how long the last one took: the full
/// [`SPIN_BEFORE_SLEEP`] when the last job came within it, none when it came later (the
/// spin would have ended before the job came, its CPU taken from the threads that make the
/// next job: the caller's, over MCP the protocol's and the client's).
fn spin_after(waited: Duration) -> Duration {
    if waited < SPIN_BEFORE_SLEEP {
        SPIN_BEFORE_SLEEP
    } else {
        Duration::ZERO
    }
}

/// The next job, looked for for `spin`, then waited for; with how long that took.
fn next_job(
    receiver: &mpsc::Receiver<Job>,
    spin: Duration,
) -> Result<(Job, Duration), mpsc::RecvError> {
    let start = std::time::Instant::now();
    let until = start + spin;
    loop {
        match receiver.try_recv() {
            Ok(job) => return Ok((job, start.elapsed())),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) if std::time::Instant::now() < until => {
                std::hint::spin_loop();
            }
            Err(mpsc::TryRecvError::Empty) => {
                return receiver.recv().map(|job| (job, start.elapsed()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(slots: usize, queue_ms: u64, max_stuck: usize) -> CallPool {
        CallPool::new(PoolOptions {
            max_concurrent_calls: slots,
            queue_timeout: Duration::from_millis(queue_ms),
            max_stuck_threads: max_stuck,
        })
    }

    #[test]
    fn the_next_job_is_taken_while_spinning_or_after_sleeping_and_disconnection_ends_it() {
        let (sender, receiver) = mpsc::channel::<Job>();
        let job = |end: JobEnd| -> Job { Box::new(move |_: &tokio::runtime::Runtime| end) };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        // Already there: taken at once.
        sender.send(job(JobEnd::Serve)).unwrap();
        let (taken, _) = next_job(&receiver, SPIN_BEFORE_SLEEP).unwrap();
        assert_eq!(taken(&runtime), JobEnd::Serve);
        // Sent well after the spin: taken by the blocking wait, and the thread stops
        // spinning (also when it did not spin for this one).
        for spin in [SPIN_BEFORE_SLEEP, Duration::ZERO] {
            let late = sender.clone();
            let sent = std::thread::spawn(move || {
                std::thread::sleep(SPIN_BEFORE_SLEEP * 20);
                late.send(job(JobEnd::Retire)).unwrap();
            });
            let (taken, waited) = next_job(&receiver, spin).unwrap();
            assert_eq!(taken(&runtime), JobEnd::Retire);
            assert!(waited >= SPIN_BEFORE_SLEEP * 20, "waited {waited:?}");
            assert_eq!(spin_after(waited), Duration::ZERO);
            sent.join().unwrap();
        }
        // Without a spin, a job already there is still taken.
        sender.send(job(JobEnd::Serve)).unwrap();
        let (taken, _) = next_job(&receiver, Duration::ZERO).unwrap();
        assert_eq!(taken(&runtime), JobEnd::Serve);
        drop(sender);
        assert!(next_job(&receiver, SPIN_BEFORE_SLEEP).is_err());
    }

    #[test]
    fn a_thread_spins_again_only_when_its_last_job_came_within_the_spin() {
        assert_eq!(spin_after(Duration::ZERO), SPIN_BEFORE_SLEEP);
        assert_eq!(
            spin_after(SPIN_BEFORE_SLEEP - Duration::from_nanos(1)),
            SPIN_BEFORE_SLEEP
        );
        assert_eq!(spin_after(SPIN_BEFORE_SLEEP), Duration::ZERO);
        assert_eq!(spin_after(Duration::from_millis(3)), Duration::ZERO);
    }

    /// A call that waits for its token (or 30 s) and says which came first.
    async fn waits(token: CancellationToken) -> &'static str {
        tokio::select! {
            () = token.cancelled() => "stopped",
            () = tokio::time::sleep(Duration::from_secs(30)) => "slept",
        }
    }

    #[tokio::test]
    async fn runs_on_a_pool_thread() {
        let pool = pool(2, 100, 1);
        let ran_on = pool
            .run(
                &CancellationToken::new(),
                Duration::from_secs(5),
                |_| async { std::thread::current().name().map(str::to_string) },
            )
            .await
            .unwrap();
        assert_eq!(ran_on.as_deref(), Some("sluice-call"));
    }

    #[tokio::test]
    async fn a_full_pool_answers_busy_after_the_queue_timeout() {
        let pool = Arc::new(pool(1, 100, 1));
        let cancel = CancellationToken::new();
        let holder = {
            let (pool, cancel) = (pool.clone(), cancel.clone());
            tokio::spawn(async move { pool.run(&cancel, Duration::from_secs(30), waits).await })
        };
        // The holder has the slot once its call has started.
        while pool.shared.slots.available_permits() > 0 {
            tokio::task::yield_now().await;
        }
        let start = std::time::Instant::now();
        let busy = pool
            .run(&CancellationToken::new(), Duration::from_secs(30), waits)
            .await
            .unwrap_err();
        assert!(start.elapsed() >= Duration::from_millis(100));
        assert_eq!(
            busy.to_string(),
            "no slot for this call: all 1 tool-call slots (runtime.max_concurrent_calls = 1) stayed busy for 100 ms (runtime.queue_timeout_ms = 100); try again later, or raise runtime.max_concurrent_calls"
        );
        cancel.cancel();
        assert_eq!(holder.await.unwrap(), Ok("stopped"));
        // The slot is free again.
        assert_eq!(
            pool.run(
                &CancellationToken::new(),
                Duration::from_secs(1),
                |_| async { 7 }
            )
            .await,
            Ok(7)
        );
    }

    #[tokio::test]
    async fn a_thread_stuck_in_a_system_call_is_left_and_replaced() {
        let pool = pool(1, 100, 1);
        let never = CancellationToken::new();
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let start = std::time::Instant::now();
        // Blocks its thread (not the future) past the deadline, as a hung read would.
        let stuck = pool
            .run(&never, Duration::from_millis(100), move |_| async move {
                let _ = blocked.recv();
            })
            .await
            .unwrap_err();
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(100) + WATCHDOG_GRACE,
            "{took:?}"
        );
        assert_eq!(
            stuck,
            PoolError::Stuck {
                stuck: 1,
                max_stuck: 1,
                replaced: true
            }
        );
        assert_eq!(pool.stuck_threads(), 1);
        // A new thread serves the next call at once.
        assert_eq!(
            pool.run(&never, Duration::from_secs(1), |_| async { "fresh" })
                .await,
            Ok("fresh")
        );
        // A second stuck call, past the limit, keeps its slot: the next call is busy.
        let (release2, blocked2) = std::sync::mpsc::channel::<()>();
        let kept = pool
            .run(&never, Duration::from_millis(50), move |_| async move {
                let _ = blocked2.recv();
            })
            .await
            .unwrap_err();
        assert_eq!(
            kept.to_string(),
            "the call's thread did not stop at the deadline (it is blocked in a system call, such as a read from a hung network file system, or the machine is too busy to run it); it was left to finish on its own (1 of at most 1 such threads) and keeps its call slot until it returns"
        );
        let busy = pool
            .run(&never, Duration::from_secs(1), |_| async {})
            .await
            .unwrap_err();
        assert_eq!(
            busy.to_string(),
            "no slot for this call: all 1 tool-call slots (runtime.max_concurrent_calls = 1) stayed busy for 100 ms (runtime.queue_timeout_ms = 100), 1 of them held by calls stuck in a system call; try again later, or raise runtime.max_concurrent_calls"
        );
        // When the system calls return, the replaced thread retires and the slot is back.
        release.send(()).unwrap();
        release2.send(()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while pool.stuck_threads() > 0 && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(pool.stuck_threads(), 0);
        assert_eq!(
            pool.run(&never, Duration::from_secs(1), |_| async { "again" })
                .await,
            Ok("again")
        );
    }

    #[tokio::test]
    async fn cancellation_reaches_a_running_call() {
        let pool = pool(1, 100, 1);
        let cancel = CancellationToken::new();
        let trigger = {
            let cancel = cancel.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                cancel.cancel();
            })
        };
        let start = std::time::Instant::now();
        let out = pool.run(&cancel, Duration::from_secs(30), waits).await;
        assert_eq!(out, Ok("stopped"));
        assert!(start.elapsed() < Duration::from_secs(5));
        trigger.await.unwrap();
        assert_eq!(
            pool.run(&cancel, Duration::from_secs(1), waits).await,
            Err(PoolError::Cancelled { running: false })
        );
    }
}
