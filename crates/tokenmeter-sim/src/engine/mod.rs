//! [`Engine`]: the handle clients submit requests to; the step loop runs in its own task.

mod active;
mod scheduler;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokenmeter::sink::{CacheConfig, EngineRecorder};
use tokenmeter::{Labels, Meter, Series};
use tokio::sync::{Notify, mpsc};

use crate::config::SimConfig;
use crate::error::{ConfigError, SubmitError};
use crate::request::{GenerateRequest, Operation};
use crate::snapshot::{Snapshot, StepStats};
use crate::stream::{Link, TokenStream};

use active::Job;
use scheduler::Scheduler;

/// The `gen_ai.provider.name` of the engine's series.
pub const PROVIDER: &str = "tokenmeter-sim";

/// Default model name.
pub const DEFAULT_MODEL: &str = "sim-llama-3-8b";

type StepHook = Arc<dyn Fn(&StepStats) + Send + Sync>;

/// A simulated continuous-batching engine. Cheap to clone; the engine task runs until every
/// clone is dropped and its last request has ended.
///
/// Each request is measured on the server side with tokenmeter: it starts when it is submitted
/// (the arrival), is marked `scheduled` when admitted to the batch, records every token when
/// its consumer takes it from the [`TokenStream`], and ends with success (the last token was
/// taken), an error (injected failure, refusal) or as cancelled (its stream was dropped
/// before its end, or cut at the stall limit), with the tokens the consumer took. The meter's
/// `waiting` and `running` gauges follow.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use futures_util::StreamExt;
/// use tokenmeter::{Clock, Meter, sink::InMemorySink};
/// use tokenmeter_sim::{Engine, GenerateRequest, SimConfig};
///
/// let memory = InMemorySink::new();
/// let meter = Meter::builder().clock(Clock::tokio()).sink(memory.clone()).build();
/// let engine = Engine::builder().meter(meter).config(SimConfig::default().seed(1)).build()?;
///
/// let mut tokens = engine.submit(GenerateRequest::chat(100, 3))?;
/// while let Some(token) = tokens.next().await {
///     print!("{}", token?.text);
/// }
/// let record = &memory.records()[0];
/// assert_eq!(record.output_tokens, 3);
/// assert_eq!(record.ttft, Some(std::time::Duration::from_millis(8))); // prefill of 100 tokens
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Engine {
    tx: mpsc::UnboundedSender<Job>,
    shared: Arc<Shared>,
}

/// State shared by the handles and the engine task.
struct Shared {
    series: [Series; 2],
    queue_limit: Option<usize>,
    kv_capacity: u64,
    max_batch: usize,
    /// KV cache allocated on demand (choices need not fit together).
    preemption: bool,
    max_model_len: u64,
    /// Submitted and not yet admitted (nor cancelled while waiting).
    queued: AtomicUsize,
    snapshot: Mutex<Snapshot>,
    /// Capacity of each request's output queue.
    output_queue: usize,
    /// Wakes the engine when a consumer takes from a full output queue or drops its stream.
    wake: Arc<Notify>,
    /// The engine's signals (shared with the scheduler): admission rejections are counted here.
    recorder: Arc<EngineRecorder>,
}

impl Engine {
    /// A builder with the default configuration, no meter (measurements go nowhere) and the
    /// model name [`DEFAULT_MODEL`].
    pub fn builder() -> EngineBuilder {
        EngineBuilder::default()
    }

    /// Submits a request. Its arrival is now; its tokens arrive on the returned stream.
    ///
    /// Refused when prompt plus output exceed the model's context length, the request can never
    /// fit in the KV cache, or the queue is at its limit; a refused request is recorded on its
    /// series with the error's class.
    pub fn submit(&self, request: GenerateRequest) -> Result<TokenStream, SubmitError> {
        let mut streams = self.submit_choices(request, 1)?;
        streams.pop().ok_or(SubmitError::Stopped)
    }

    /// Submits a request with `n` choices (OpenAI's `n`; 0 counts as 1): `n` engine requests
    /// with the same parameters, each with its own stream and measurement, as vLLM runs a
    /// parent request as `n` child requests. The first carries the request's `n`
    /// ([`GenerateRequest::choices`]), so the parameter is published once per request.
    ///
    /// All or nothing: besides [`submit`](Self::submit)'s reasons, refused when the choices
    /// could never all run at once (more than [`SimConfig::max_batch`], or, reserving whole
    /// outputs, more KV-cache tokens together than the cache holds), or when the queue has no
    /// room for all of them. A refused request is recorded once, with its `n`, and no choice
    /// of it is queued.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use tokenmeter_sim::{Engine, GenerateRequest, SimConfig, SubmitError};
    ///
    /// let engine = Engine::builder().config(SimConfig::default().max_batch(4)).build()?;
    /// assert_eq!(engine.submit_choices(GenerateRequest::chat(10, 2), 4)?.len(), 4);
    /// let refused = engine.submit_choices(GenerateRequest::chat(10, 2), 5);
    /// assert!(matches!(refused, Err(SubmitError::TooManyChoices { n: 5, max_batch: 4 })));
    /// # Ok(())
    /// # }
    /// ```
    pub fn submit_choices(
        &self,
        request: GenerateRequest,
        n: u32,
    ) -> Result<Vec<TokenStream>, SubmitError> {
        let n = n.max(1);
        let shared = &*self.shared;
        let mut first = self.measure(&request);
        if let Err(error) = shared.admissible(&request, n) {
            if let Some(reason) = error.admission_reason() {
                shared.recorder.add_admission_rejections(reason, 1);
            }
            first.fail(error.error_class());
            return Err(error);
        }
        let mut streams = Vec::with_capacity(n as usize);
        let mut metered = Some(first);
        for _ in 0..n {
            let measure = metered.take().unwrap_or_else(|| {
                let mut child = request.clone();
                child.choices = None;
                self.measure(&child)
            });
            let (id, arrival) = (measure.id(), measure.arrival());
            let (tx, rx) = mpsc::unbounded_channel();
            let link = Arc::new(Link::new(shared.output_queue, shared.wake.clone()));
            let job = Job {
                params: request.clone(),
                request: measure,
                tx,
                link: link.clone(),
            };
            if let Err(mpsc::error::SendError(mut job)) = self.tx.send(job) {
                // The choices not sent give their places back; those sent are cancelled with
                // their streams.
                let unsent = n as usize - streams.len();
                shared.queued.fetch_sub(unsent, Ordering::Relaxed);
                job.request.fail(SubmitError::Stopped.error_class());
                return Err(SubmitError::Stopped);
            }
            streams.push(TokenStream::new(rx, link, id, arrival));
        }
        Ok(streams)
    }

    /// A new measurement of `request`, arriving now, with its parameters.
    fn measure(&self, request: &GenerateRequest) -> Box<tokenmeter::Request> {
        let mut metered = self.shared.series(request.operation).start();
        metered.set_input_tokens(u64::from(request.prompt_tokens));
        if let Some(max) = request.max_tokens {
            metered.set_max_tokens(u64::from(max));
        }
        if let Some(n) = request.choices {
            metered.set_choices(n);
        }
        if let Some(targets) = request.slo_targets {
            metered.set_slo_targets(targets);
        }
        Box::new(metered)
    }

    /// The engine's state now. It is published before a finished request's last token or
    /// error goes out and before the meter records its end, so whoever sees a request end
    /// sees a snapshot without it.
    pub fn snapshot(&self) -> Snapshot {
        let mut snapshot = *self
            .shared
            .snapshot
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        snapshot.waiting = self.queue_depth();
        snapshot
    }

    /// KV-cache usage now, a fraction from 0 to 1.
    pub fn kv_usage(&self) -> f64 {
        self.snapshot().kv_usage()
    }

    /// Requests waiting now.
    pub fn queue_depth(&self) -> usize {
        self.shared.queued.load(Ordering::Relaxed)
    }

    /// Requests running now (the batch).
    pub fn batch_size(&self) -> usize {
        self.snapshot().running
    }

    /// The series requests of `operation` are measured on.
    pub fn series(&self, operation: Operation) -> &Series {
        self.shared.series(operation)
    }
}

impl fmt::Debug for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("snapshot", &self.snapshot())
            .finish()
    }
}

impl Shared {
    fn series(&self, operation: Operation) -> &Series {
        match operation {
            Operation::Chat => &self.series[0],
            Operation::TextCompletion => &self.series[1],
        }
    }

    /// Checks that `n` choices of `request` can run, then takes `n` places in the queue at
    /// once; the refusal otherwise.
    fn admissible(&self, request: &GenerateRequest, n: u32) -> Result<(), SubmitError> {
        let needed = request.kv_tokens();
        if needed > self.max_model_len {
            return Err(SubmitError::ContextLength {
                prompt: request.prompt_tokens,
                completion: request.generated(),
                max_model_len: self.max_model_len,
            });
        }
        if needed > self.kv_capacity {
            return Err(SubmitError::TooLarge {
                needed,
                capacity: self.kv_capacity,
            });
        }
        if n as usize > self.max_batch {
            return Err(SubmitError::TooManyChoices {
                n,
                max_batch: self.max_batch,
            });
        }
        let together = needed.saturating_mul(u64::from(n));
        if !self.preemption && together > self.kv_capacity {
            return Err(SubmitError::ChoicesTooLarge {
                n,
                needed: together,
                capacity: self.kv_capacity,
            });
        }
        self.enqueue(n as usize)
    }

    /// Takes `n` places in the queue, or none when they would pass its limit.
    fn enqueue(&self, n: usize) -> Result<(), SubmitError> {
        match self.queue_limit {
            None => {
                self.queued.fetch_add(n, Ordering::Relaxed);
                Ok(())
            }
            Some(limit) => self
                .queued
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |waiting| {
                    (waiting + n <= limit).then_some(waiting + n)
                })
                .map(drop)
                .map_err(|waiting| SubmitError::QueueFull { waiting, limit }),
        }
    }
}

/// Builds an [`Engine`].
#[derive(Default)]
pub struct EngineBuilder {
    config: SimConfig,
    meter: Option<Meter>,
    model: Option<String>,
    on_step: Option<StepHook>,
}

impl EngineBuilder {
    /// The configuration (default [`SimConfig::default`]).
    pub fn config(mut self, config: SimConfig) -> Self {
        self.config = config;
        self
    }

    /// The meter requests are measured with (its clock and sinks). Without one, measurements
    /// go nowhere. Use `Clock::tokio()` in tests under paused time.
    pub fn meter(mut self, meter: Meter) -> Self {
        self.meter = Some(meter);
        self
    }

    /// The model name (`gen_ai.request.model` of the series; default [`DEFAULT_MODEL`]).
    pub fn model(mut self, name: impl Into<String>) -> Self {
        self.model = Some(name.into());
        self
    }

    /// A hook called after every engine step, from the engine task. It must be quick and must
    /// not block.
    pub fn on_step(mut self, hook: impl Fn(&StepStats) + Send + Sync + 'static) -> Self {
        self.on_step = Some(Arc::new(hook));
        self
    }

    /// Validates the configuration and starts the engine task on the current tokio runtime.
    pub fn build(self) -> Result<Engine, ConfigError> {
        self.config.validate()?;
        let runtime = tokio::runtime::Handle::try_current().map_err(|_| ConfigError::NoRuntime)?;
        let meter = self.meter.unwrap_or_default();
        let model = self.model.as_deref().unwrap_or(DEFAULT_MODEL);
        let series = [Operation::Chat, Operation::TextCompletion].map(|operation| {
            meter.series(
                &Labels::server(operation.as_str())
                    .provider(PROVIDER)
                    .request_model(model),
            )
        });
        let steps =
            Arc::new(meter.engine(&Labels::server("").provider(PROVIDER).request_model(model)));
        steps.set_cache_config(CacheConfig::new(
            crate::prefix::BLOCK_TOKENS,
            self.config.kv_capacity_tokens / u64::from(crate::prefix::BLOCK_TOKENS),
        ));
        let shared = Arc::new(Shared {
            recorder: steps.clone(),
            series,
            queue_limit: self.config.faults.queue_limit,
            kv_capacity: self.config.kv_capacity_tokens,
            max_batch: self.config.max_batch,
            preemption: self.config.preemption,
            max_model_len: self.config.max_model_len,
            queued: AtomicUsize::new(0),
            snapshot: Mutex::new(Snapshot {
                kv_capacity_tokens: self.config.kv_capacity_tokens,
                ..Snapshot::default()
            }),
            output_queue: self.config.output_queue,
            wake: Arc::new(Notify::new()),
        });
        let (tx, rx) = mpsc::unbounded_channel();
        let scheduler = Scheduler::new(self.config, shared.clone(), rx, self.on_step, steps);
        runtime.spawn(scheduler.run());
        Ok(Engine { tx, shared })
    }
}

impl fmt::Debug for EngineBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EngineBuilder")
            .field("config", &self.config)
            .field("meter", &self.meter)
            .field("model", &self.model)
            .field("on_step", &self.on_step.is_some())
            .finish()
    }
}
