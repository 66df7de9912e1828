//! Compiles that run in the background, at most one per core at once
//! (docs/components.md#compiled-components): a queue of jobs and the threads that take them,
//! started when jobs wait and gone when the queue is empty.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// The queue and its threads; see the module docs.
#[derive(Debug)]
pub(crate) struct CompileQueue {
    inner: Arc<Mutex<Queue>>,
    max_threads: usize,
}

struct Queue {
    jobs: VecDeque<Job>,
    threads: usize,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("jobs", &self.jobs.len())
            .field("threads", &self.threads)
            .finish()
    }
}

impl CompileQueue {
    /// A queue running at most `max_threads` jobs at once (at least 1).
    pub(crate) fn new(max_threads: usize) -> CompileQueue {
        CompileQueue {
            inner: Arc::new(Mutex::new(Queue {
                jobs: VecDeque::new(),
                threads: 0,
            })),
            max_threads: max_threads.max(1),
        }
    }

    /// Runs `job` on a queue thread, after the jobs submitted before it have started.
    /// When no thread can be started, `job` runs on the caller's thread.
    pub(crate) fn submit(&self, job: impl FnOnce() + Send + 'static) {
        let mut queue = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        queue.jobs.push_back(Box::new(job));
        if queue.threads >= self.max_threads {
            return;
        }
        queue.threads += 1;
        drop(queue);
        let inner = self.inner.clone();
        let started = std::thread::Builder::new()
            .name("sluice-compile".into())
            .spawn(move || work(&inner));
        if let Err(e) = started {
            tracing::warn!(error = %e, "could not start a compile thread; compiling on this one");
            let mut queue = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            queue.threads -= 1;
            let job = queue.jobs.pop_back();
            drop(queue);
            if let Some(job) = job {
                job();
            }
        }
    }
}

/// A queue thread: takes jobs until none is left.
fn work(inner: &Mutex<Queue>) {
    loop {
        let job = {
            let mut queue = inner.lock().unwrap_or_else(PoisonError::into_inner);
            match queue.jobs.pop_front() {
                Some(job) => job,
                None => {
                    queue.threads -= 1;
                    return;
                }
            }
        };
        // A job that panics must not take the thread's count with it.
        if std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).is_err() {
            tracing::error!("a background compile panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    #[test]
    fn jobs_run_in_order_at_most_max_at_once_and_the_threads_end() {
        let queue = CompileQueue::new(2);
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let (done, finished) = mpsc::channel();
        for i in 0..8 {
            let (running, most, done) = (running.clone(), most.clone(), done.clone());
            queue.submit(move || {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
                running.fetch_sub(1, Ordering::SeqCst);
                done.send(i).unwrap();
            });
        }
        let order: Vec<i32> = (0..8)
            .map(|_| finished.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        assert_eq!(most.load(Ordering::SeqCst), 2);
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..8).collect::<Vec<_>>());
        // Threads end once the queue is empty.
        for _ in 0..100 {
            if queue.inner.lock().unwrap().threads == 0 {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("the queue's threads did not end");
    }

    #[test]
    fn a_panicking_job_leaves_the_queue_working() {
        let queue = CompileQueue::new(1);
        queue.submit(|| panic!("boom"));
        let (done, finished) = mpsc::channel();
        queue.submit(move || done.send(()).unwrap());
        finished.recv_timeout(Duration::from_secs(10)).unwrap();
    }
}
