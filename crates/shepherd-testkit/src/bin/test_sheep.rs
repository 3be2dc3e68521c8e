//! `shepherd-test-sheep`: a deterministic sheep for Shepherd's tests and benchmarks.
//!
//! Usage: `shepherd-test-sheep [--on-task SCRIPT] [--on-question reply TEXT|ignore]`.
//! It connects with the capability in its environment, subscribes to its inbox and runs the
//! script (see `shepherd_testkit::script`) for every delegated task; a plain message that
//! arrives between tasks is printed (`message: <first line>`). When the broker goes away it
//! reconnects (a restarted broker redelivers whatever was not acknowledged).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use shepherd_client::wire::{Client, ClientError, Push};
use shepherd_core::envelope::{Envelope, Kind};
use shepherd_core::herd::Payload;
use shepherd_core::protocol::{
    AckParams, Call, DoneParams, Hello, MessageParams, NoParams, PROTOCOL_VERSION, ReportEvent,
    ReportParams, Role, calls, event,
};
use shepherd_core::task::DoneStatus;
use shepherd_testkit::script::{Step, fill, parse};

/// How long the sheep keeps trying to reach a broker that went away.
const RECONNECT_FOR: Duration = Duration::from_secs(60);

struct Options {
    on_task: Vec<Step>,
    answer: Option<String>,
}

fn options() -> Result<Options, String> {
    let mut args = std::env::args().skip(1);
    let mut on_task = "done completed {task}".to_owned();
    let mut answer = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--on-task" => on_task = args.next().ok_or("--on-task needs a script")?,
            "--on-question" => {
                let how = args
                    .next()
                    .ok_or("--on-question needs `reply TEXT` or `ignore`")?;
                answer = match how.split_once(' ') {
                    Some(("reply", text)) => Some(text.to_owned()),
                    None if how == "ignore" => None,
                    _ => {
                        return Err(format!(
                            "--on-question `{how}`: use `reply TEXT` or `ignore`"
                        ));
                    }
                };
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Options {
        on_task: parse(&on_task).map_err(|e| e.to_string())?,
        answer,
    })
}

fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(err) => {
            eprintln!("shepherd-test-sheep: {err}");
            return ExitCode::from(2);
        }
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    match runtime.block_on(run(&options)) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("shepherd-test-sheep: {err}");
            ExitCode::from(1)
        }
    }
}

struct Sheep {
    client: Client,
    hello: Hello,
    socket: String,
    backlog: Vec<Envelope>,
    seen: std::collections::HashSet<String>,
    answer: Option<String>,
}

async fn connect(socket: &str, hello: &Hello) -> Result<Client, String> {
    let (mut client, _) = Client::open(socket.as_ref(), hello)
        .await
        .map_err(|e| e.to_string())?;
    client
        .send::<calls::Subscribe>(&NoParams {})
        .await
        .map_err(|e| e.to_string())?;
    Ok(client)
}

impl Sheep {
    async fn reconnect(&mut self) -> Result<(), String> {
        let until = Instant::now() + RECONNECT_FOR;
        let mut backoff = Duration::from_millis(20);
        loop {
            match connect(&self.socket, &self.hello).await {
                Ok(client) => {
                    self.client = client;
                    return Ok(());
                }
                Err(err) if Instant::now() >= until => return Err(format!("broker gone: {err}")),
                Err(_) => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_millis(500));
                }
            }
        }
    }

    /// The next envelope not seen before, acknowledging it. Questions are answered on the way
    /// when `--on-question` says so and `answering` is on.
    async fn next(&mut self, answering: bool) -> Result<Envelope, String> {
        loop {
            if let Some(pos) = self
                .backlog
                .iter()
                .position(|e| !answering || !is_question(e) || self.answer.is_none())
            {
                return Ok(self.backlog.remove(pos));
            }
            let inbox = match self.client.next_event().await {
                Ok(Push::Inbox(inbox)) => inbox,
                Ok(Push::Other { event, data }) if event == event::INBOX => {
                    return Err(format!("unreadable inbox push: {data}"));
                }
                Ok(_) => continue,
                Err(_) => {
                    self.reconnect().await?;
                    continue;
                }
            };
            if let Some(last) = inbox.items.last() {
                let _acked = self
                    .client
                    .send::<calls::Ack>(&AckParams { seq: last.seq })
                    .await;
            }
            for item in inbox.items {
                let Payload::Envelope { envelope } = item.payload else {
                    continue;
                };
                if !self.seen.insert(envelope.message_id.to_string()) {
                    continue;
                }
                if answering
                    && is_question(&envelope)
                    && let Some(text) = self.answer.clone()
                {
                    self.reply(&envelope, &text).await?;
                    continue;
                }
                self.backlog.push(envelope);
            }
        }
    }

    async fn reply(&mut self, question: &Envelope, text: &str) -> Result<(), String> {
        let reply = MessageParams {
            target: question.author().as_str().to_owned(),
            message: text.to_owned(),
            reply_to: Some(question.message_id.to_string()),
            ..MessageParams::default()
        };
        self.call::<calls::Tell>(&reply).await.map(|_| ())
    }

    /// Sends `C`, once more after a reconnect when the connection was lost.
    async fn call<C: Call>(&mut self, params: &C::Params) -> Result<C::Result, String> {
        match self.client.send::<C>(params).await {
            Err(ClientError::Remote(err)) => Err(format!("{}: {}", err.code, err.message)),
            Err(_) => {
                self.reconnect().await?;
                self.client
                    .send::<C>(params)
                    .await
                    .map_err(|e| e.to_string())
            }
            Ok(answer) => Ok(answer),
        }
    }
}

/// `done` with `status` and `summary`, for the sheep's open task.
fn done(status: DoneStatus, summary: String) -> DoneParams {
    DoneParams {
        status,
        summary: Some(summary),
        task_id: None,
    }
}

/// A plain message to `target`.
fn message(target: String, message: String) -> MessageParams {
    MessageParams {
        target,
        message,
        ..MessageParams::default()
    }
}

fn is_question(envelope: &Envelope) -> bool {
    envelope.expects_reply && envelope.kind == Kind::Message
}

async fn run(options: &Options) -> Result<u8, String> {
    let var = |name: &str| std::env::var(name).map_err(|_| format!("{name} is not set"));
    let hello = Hello {
        protocol: PROTOCOL_VERSION,
        role: Role::Sheep,
        agent_id: Some(var("SHEPHERD_AGENT_ID")?),
        token: Some(var("SHEPHERD_TOKEN")?),
        client: Some("test-sheep".into()),
        session_file: None,
        driver: None,
    };
    let socket = var("SHEPHERD_SOCKET")?;
    let client = connect(&socket, &hello).await?;
    let mut sheep = Sheep {
        client,
        hello,
        socket,
        backlog: Vec::new(),
        seen: std::collections::HashSet::new(),
        answer: options.answer.clone(),
    };
    println!("test sheep ready");
    loop {
        let envelope = sheep.next(true).await?;
        if envelope.kind != Kind::Task {
            // Between tasks a plain message is only shown, so a test can see it arrived.
            if envelope.kind == Kind::Message {
                let text = envelope.content.as_deref().unwrap_or_default();
                println!("message: {}", text.lines().next().unwrap_or_default());
            }
            continue;
        }
        let task = envelope.content.clone().unwrap_or_default();
        let id = envelope
            .task_id
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        let mut reply = String::new();
        for step in &options.on_task {
            let fill = |text: &str, reply: &str| fill(text, &task, reply, &id);
            match step {
                Step::Done { status, text } => {
                    let summary = fill(text, &reply);
                    sheep.call::<calls::Done>(&done(*status, summary)).await?;
                }
                Step::Ask { target, text } => {
                    let question = MessageParams {
                        expects_reply: true,
                        ..message(fill(target, &reply), fill(text, &reply))
                    };
                    sheep.call::<calls::Tell>(&question).await?;
                    loop {
                        let answer = sheep.next(true).await?;
                        if answer.kind == Kind::Reply {
                            reply = answer.content.unwrap_or_default();
                            break;
                        }
                    }
                }
                Step::Answer(text) => loop {
                    let question = sheep.next(false).await?;
                    if is_question(&question) {
                        let text = fill(text, &reply);
                        sheep.reply(&question, &text).await?;
                        break;
                    }
                },
                Step::Await => loop {
                    let message = sheep.next(true).await?;
                    if message.kind == Kind::Message && !message.expects_reply {
                        reply = message.content.unwrap_or_default();
                        break;
                    }
                },
                Step::Tell { target, text } => {
                    let told = message(fill(target, &reply), fill(text, &reply));
                    sheep.call::<calls::Tell>(&told).await?;
                }
                Step::Sleep(ms) => tokio::time::sleep(Duration::from_millis(*ms)).await,
                Step::Print(text) => println!("{}", fill(text, &reply)),
                Step::Crash(code) => {
                    println!("crashing with status {code}");
                    return Ok(u8::try_from(*code).unwrap_or(1));
                }
                Step::Forget => {
                    let settled = ReportParams {
                        event: ReportEvent::RunSettled,
                        stop_reason: Some("stop".to_owned()),
                        ..ReportParams::default()
                    };
                    sheep.call::<calls::Report>(&settled).await?;
                    loop {
                        if sheep.next(true).await?.kind == Kind::Reminder {
                            break;
                        }
                    }
                }
                Step::Idle => break,
                Step::Need(name) => {
                    if std::env::var_os(name).is_none_or(|value| value.is_empty()) {
                        let summary = format!("{name} is not set");
                        println!("{summary}");
                        sheep
                            .call::<calls::Done>(&done(DoneStatus::Failed, summary))
                            .await?;
                        break;
                    }
                }
            }
        }
    }
}
