//! Compiles that run in the background (docs/components.md#compiled-components): a thread
//! pool of their own, one thread per core by default.
//!
//! wasmtime compiles a component's functions in parallel on rayon's pool of the thread that
//! compiles. A compile started on this pool keeps all of that work on this pool's threads,
//! so background compiles never queue ahead of a compile the caller waits for (a stand-in's,
//! on the caller's thread and rayon's global pool), and take at most this pool's threads.
//!
//! Jobs have two tiers: a [`Tier::Later`] job (Cranelift's code for a component that already
//! runs Winch's) starts only when no [`Tier::First`] job waits. The pool keeps the jobs in
//! its own queues and gives rayon one runner per job, which takes the next job by tier: rayon
//! alone would run a job spawned from a compile thread before the jobs already waiting.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// Which queue a job waits in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tier {
    /// A compile calls wait for: first, in the order submitted.
    First,
    /// A compile nothing waits for: after every first-tier job, in the order submitted.
    Later,
}

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The jobs waiting, by tier.
#[derive(Default)]
struct Queues {
    first: VecDeque<Job>,
    later: VecDeque<Job>,
}

/// The pool; see the module docs.
pub(crate) struct CompilePool {
    pool: Option<ThreadPool>,
    queues: Arc<Mutex<Queues>>,
}

impl std::fmt::Debug for CompilePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompilePool")
            .field(
                "threads",
                &self.pool.as_ref().map(ThreadPool::current_num_threads),
            )
            .finish()
    }
}

impl CompilePool {
    /// A pool of `threads` threads (at least 1). When no thread can be started, compiles run
    /// on the thread that submits them (with a warning).
    pub(crate) fn new(threads: usize) -> CompilePool {
        let pool = ThreadPoolBuilder::new()
            .num_threads(threads.max(1))
            .thread_name(|i| format!("sluice-compile-{i}"))
            // A job that panics must not take the process with it (rayon's default aborts).
            .panic_handler(|_| tracing::error!("a background compile panicked"))
            .build()
            .inspect_err(|e| {
                tracing::warn!(error = %e, "no compile threads; compiling on the caller's thread");
            })
            .ok();
        CompilePool {
            pool,
            queues: Arc::default(),
        }
    }

    /// Runs `job` on the pool after the jobs of its tier submitted before it have started,
    /// and (for [`Tier::Later`]) once no [`Tier::First`] job waits.
    pub(crate) fn submit(&self, tier: Tier, job: impl FnOnce() + Send + 'static) {
        let Some(pool) = &self.pool else {
            return job();
        };
        {
            let mut queues = self.queues.lock().unwrap_or_else(PoisonError::into_inner);
            match tier {
                Tier::First => queues.first.push_back(Box::new(job)),
                Tier::Later => queues.later.push_back(Box::new(job)),
            }
        }
        let queues = self.queues.clone();
        pool.spawn_fifo(move || {
            let next = {
                let mut queues = queues.lock().unwrap_or_else(PoisonError::into_inner);
                queues
                    .first
                    .pop_front()
                    .or_else(|| queues.later.pop_front())
            };
            if let Some(job) = next {
                job();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    use super::*;

    #[test]
    fn jobs_run_at_most_threads_at_once_and_a_panic_leaves_the_pool_working() {
        let pool = CompilePool::new(2);
        pool.submit(Tier::First, || panic!("boom"));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (done, finished) = mpsc::channel();
        for i in 0..6 {
            let (running, most, done) = (running.clone(), most.clone(), done.clone());
            pool.submit(Tier::First, move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
                done.send(i).unwrap();
            });
        }
        let mut ran: Vec<i32> = (0..6)
            .map(|_| finished.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        ran.sort();
        assert_eq!(ran, (0..6).collect::<Vec<_>>());
        assert!(most.load(Ordering::SeqCst) <= 2);
    }

    #[test]
    fn a_later_job_waits_for_every_first_job_even_one_submitted_after_it() {
        let pool = CompilePool::new(1);
        let (release, held) = mpsc::channel::<()>();
        pool.submit(Tier::First, move || {
            let _ = held.recv();
        });
        let ran = Arc::new(Mutex::new(Vec::new()));
        let (done, finished) = mpsc::channel();
        for (tier, name) in [
            (Tier::Later, "later 1"),
            (Tier::First, "first 1"),
            (Tier::Later, "later 2"),
            (Tier::First, "first 2"),
        ] {
            let (ran, done) = (ran.clone(), done.clone());
            pool.submit(tier, move || {
                ran.lock().unwrap().push(name);
                done.send(()).unwrap();
            });
        }
        release.send(()).unwrap();
        for _ in 0..4 {
            finished.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        assert_eq!(
            *ran.lock().unwrap(),
            ["first 1", "first 2", "later 1", "later 2"]
        );
    }

    #[test]
    fn two_threads_run_two_jobs_at_once() {
        let pool = CompilePool::new(2);
        // Each job waits for the other: they finish only if both run at once.
        let both = Arc::new(std::sync::Barrier::new(2));
        let (done, finished) = mpsc::channel();
        for _ in 0..2 {
            let (both, done) = (both.clone(), done.clone());
            pool.submit(Tier::First, move || {
                both.wait();
                done.send(()).unwrap();
            });
        }
        for _ in 0..2 {
            finished.recv_timeout(Duration::from_secs(10)).unwrap();
        }
    }
}
