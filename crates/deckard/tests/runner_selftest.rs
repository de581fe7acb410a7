//! The runner against a resolver written here: a forwarder that relays
//! each query to the root hint and the answer back. It checks the
//! machinery end to end (namespace, addresses, simulated servers, steps,
//! the clock, failure reports) without depending on a real resolver's
//! behaviour. Needs root for the network namespace: skipped outside CI
//! without it, failed under CI.

use std::net::{IpAddr, SocketAddr, TcpListener, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use bulwark_deckard::runner::{namespaces_available, Verdict};
use bulwark_deckard::{
    parse_str, run_once, Resolver, ResolverSettings, RunOptions, RunningResolver, Scenario,
};

/// Relays UDP queries on port 53 to the first root hint, and accepts TCP
/// connections (the runner's readiness check) without answering them.
struct Forwarder {
    /// Every `advance_time`, in order.
    clock: Arc<Mutex<Vec<u64>>>,
}

struct RunningForwarder {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    clock: Arc<Mutex<Vec<u64>>>,
}

impl Resolver for Forwarder {
    fn name(&self) -> &str {
        "forwarder"
    }

    fn start(&self, settings: &ResolverSettings) -> Result<Box<dyn RunningResolver>, String> {
        let upstream = SocketAddr::new(settings.root_hints.first().ok_or("no root hint")?.1, 53);
        let listen = settings.listen;
        let udp = UdpSocket::bind((listen, 53)).map_err(|e| e.to_string())?;
        let tcp = TcpListener::bind((listen, 53)).map_err(|e| e.to_string())?;
        udp.set_read_timeout(Some(Duration::from_millis(50)))
            .map_err(|e| e.to_string())?;
        tcp.set_nonblocking(true).map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = Arc::clone(&stop);
        let relay = std::thread::spawn(move || relay(&udp, listen, upstream, &s));
        let s = Arc::clone(&stop);
        let accept = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                let _ = tcp.accept();
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        Ok(Box::new(RunningForwarder {
            stop,
            threads: vec![relay, accept],
            clock: Arc::clone(&self.clock),
        }))
    }
}

fn relay(udp: &UdpSocket, listen: IpAddr, upstream: SocketAddr, stop: &AtomicBool) {
    let mut buf = vec![0u8; 65535];
    while !stop.load(Ordering::SeqCst) {
        let Ok((n, client)) = udp.recv_from(&mut buf) else {
            continue;
        };
        let out = UdpSocket::bind((listen, 0)).unwrap();
        out.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        out.send_to(&buf[..n], upstream).unwrap();
        let mut answer = vec![0u8; 65535];
        if let Ok(m) = out.recv(&mut answer) {
            udp.send_to(&answer[..m], client).unwrap();
        }
    }
}

impl RunningResolver for RunningForwarder {
    fn pid(&self) -> u32 {
        std::process::id()
    }

    fn advance_time(&mut self, seconds: u64) -> Result<(), String> {
        self.clock.lock().unwrap().push(seconds);
        Ok(())
    }

    fn exited(&mut self) -> Option<String> {
        None
    }

    fn log_tail(&self, _lines: usize) -> String {
        "the forwarder keeps no log".to_string()
    }

    fn stop(&mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::SeqCst);
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
        Ok(())
    }
}

const ROOT: &str = "stub-addr: 192.0.2.1\nCONFIG_END\nSCENARIO_BEGIN self-test\n\
RANGE_BEGIN 0 100\nADDRESS 192.0.2.1\n\
ENTRY_BEGIN\nMATCH opcode qtype qname\nADJUST copy_id\nREPLY QR AA NOERROR\nSECTION QUESTION\nwww.example. IN A\n\
SECTION ANSWER\nwww.example. IN A 192.0.2.80\nENTRY_END\n\
RANGE_END\n\
STEP 1 QUERY\nENTRY_BEGIN\nREPLY RD\nSECTION QUESTION\nwww.example. IN A\nENTRY_END\n";

fn scenario(steps: &str) -> Scenario {
    parse_str(
        Path::new("selftest.rpl"),
        &format!("{ROOT}{steps}SCENARIO_END\n"),
    )
    .unwrap()
}

fn run(s: &Scenario) -> (Verdict, Vec<u64>) {
    let clock = Arc::new(Mutex::new(Vec::new()));
    let forwarder = Forwarder {
        clock: Arc::clone(&clock),
    };
    let result = run_once(s, &forwarder, true, &RunOptions::default());
    let clock = clock.lock().unwrap().clone();
    (result.verdict, clock)
}

fn namespaces() -> bool {
    match namespaces_available() {
        Ok(()) => true,
        Err(e) if bulwark_testkit::in_ci() => panic!("{e}; CI is set"),
        Err(e) => {
            eprintln!("SKIPPED: {e}");
            false
        }
    }
}

#[test]
fn a_scenario_the_forwarder_follows_passes_and_time_passes() {
    if !namespaces() {
        return;
    }
    let s = scenario(
        "STEP 2 CHECK_ANSWER\nENTRY_BEGIN\nMATCH all\nREPLY QR AA NOERROR\nSECTION QUESTION\nwww.example. IN A\n\
         SECTION ANSWER\nwww.example. IN A 192.0.2.80\nENTRY_END\n\
         STEP 3 TIME_PASSES ELAPSE 600\n\
         STEP 4 QUERY\nENTRY_BEGIN\nRAW\nb5c9ca3d50104320f4120000000000000000\nENTRY_END\n\
         STEP 5 QUERY\nENTRY_BEGIN\nREPLY RD\nSECTION QUESTION\nwww.example. IN A\nENTRY_END\n\
         STEP 6 CHECK_ANSWER\nENTRY_BEGIN\nMATCH answer rcode\nREPLY NOERROR\nSECTION ANSWER\nwww.example. IN A 192.0.2.80\nENTRY_END\n",
    );
    let (verdict, clock) = run(&s);
    assert_eq!(verdict, Verdict::Passed);
    assert_eq!(clock, vec![600]);
}

#[test]
fn a_wrong_answer_fails_its_step_with_the_queries_sent() {
    if !namespaces() {
        return;
    }
    let s = scenario(
        "STEP 2 CHECK_ANSWER\nENTRY_BEGIN\nMATCH answer\nSECTION ANSWER\nwww.example. IN A 192.0.2.81\nENTRY_END\n",
    );
    let (verdict, _) = run(&s);
    let Verdict::Failed(f) = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(f.step, Some(2));
    assert!(
        f.summary.starts_with("STEP 2 CHECK_ANSWER (selftest.rpl:"),
        "{}",
        f.summary
    );
    assert!(
        f.details.contains("www.example. 3600 IN A 192.0.2.81"),
        "{}",
        f.details
    );
    assert!(
        f.details
            .contains("-> 192.0.2.1 UDP: www.example. IN A [RD] +edns"),
        "{}",
        f.details
    );
    assert!(
        f.details
            .contains("answered by selftest.rpl:6 (RANGE 0-100 at line 4)"),
        "{}",
        f.details
    );
}

#[test]
fn a_query_the_scenario_cannot_answer_fails_the_run() {
    if !namespaces() {
        return;
    }
    let s = scenario(
        "STEP 2 QUERY\nENTRY_BEGIN\nREPLY RD\nSECTION QUESTION\nnowhere.example. IN A\nENTRY_END\n\
         STEP 3 CHECK_ANSWER\nENTRY_BEGIN\nMATCH rcode\nREPLY SERVFAIL\nENTRY_END\n",
    );
    let (verdict, _) = run(&s);
    let Verdict::Failed(f) = verdict else {
        panic!("{verdict:?}")
    };
    assert_eq!(f.step, None);
    assert!(
        f.summary.starts_with("the scenario does not define all necessary answers: 1 query unanswered, the first at step 2"),
        "{}",
        f.summary
    );
}

#[test]
fn no_answer_within_the_timeout_fails_the_query_step() {
    if !namespaces() {
        return;
    }
    // The forwarder relays nothing for a server that does not answer.
    let text = format!(
        "{}SCENARIO_END\n",
        ROOT.replace("ADJUST copy_id\n", "ADJUST copy_id do_not_answer\n")
    );
    let s = parse_str(Path::new("selftest.rpl"), &text).unwrap();
    let clock = Arc::new(Mutex::new(Vec::new()));
    let options = RunOptions {
        query_timeout: Duration::from_millis(300),
        ..RunOptions::default()
    };
    let r = run_once(&s, &Forwarder { clock }, true, &options);
    let Verdict::Failed(f) = r.verdict else {
        panic!("{:?}", r.verdict)
    };
    assert_eq!(f.step, Some(1));
    assert!(
        f.summary.ends_with("no answer within 300ms"),
        "{}",
        f.summary
    );
    assert!(
        f.details.contains("not answered (do_not_answer)"),
        "{}",
        f.details
    );
}
