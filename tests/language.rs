//! The interface language (`language`, `$REASONIX_LANG`, the locale) and
//! `agent.reasoning_language`, through the real binary: the chat in Chinese in a
//! pseudo-terminal (status line, `/help`, an approval card, `/memory`, `/rewind`, goal mode,
//! error lines), `reasonix doctor` in Chinese, that the language never reaches the model, the
//! one fixed reasoning-language line of the system prompt, and the browser page's strings
//! served from the same catalog.

use serde_json::Value;

use crate::util::fake_openai::{FakeOpenAI, Reply};
use crate::util::pty::Pty;
use crate::util::{reasonix, run, use_fake_provider, Dir};

/// The system prompt of request `n` (1-based).
fn system_prompt(server: &FakeOpenAI, n: usize) -> String {
    let requests = server.wait_for_requests(n);
    requests[n - 1].body["messages"][0]["content"]
        .as_str()
        .expect("a system message")
        .to_string()
}

#[test]
fn the_chat_speaks_chinese_and_the_model_still_reads_english() {
    let server = FakeOpenAI::start(vec![
        Reply::tool_calls(&[("c1", "write_file", r#"{"path":"x.txt","content":"data"}"#)]),
        Reply::text("好的，不写了。"),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "language = \"zh\"");
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 110, 32);
    pty.wait_text("fake-model · 需要批准 · 正常模式");
    pty.wait_text("有问题尽管问");
    pty.wait_text("/help 查看命令");

    // `/help` from the menu, whose descriptions are Chinese too.
    pty.send("/hel");
    pty.wait_text("/help  显示命令和按键");
    pty.send("\r");
    pty.wait_text("接受补全");
    let history = pty.vt.history();
    assert!(history.contains("\n命令\n"), "{history}");
    assert!(history.contains("\n按键\n"), "{history}");
    assert!(history.contains("/exit  离开对话"), "{history}");

    // An approval card in Chinese; esc denies, and the model is told in English.
    pty.send("write x\r");
    pty.wait_text("允许 write_file？");
    let screen = pty.screen();
    assert!(screen.contains("1. 是"), "{screen}");
    assert!(screen.contains("否，并告诉模型应该怎么做"), "{screen}");
    assert!(screen.contains("esc 取消"), "{screen}");
    pty.send("\x1b");
    pty.wait_text("好的，不写了。");
    // Idle again: the placeholder only shows between turns.
    pty.wait_text("有问题尽管问");
    assert!(!work.join("x.txt").exists());
    let requests = server.wait_for_requests(2);
    let tool = requests[1].body["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result")
        .clone();
    assert!(
        tool["content"]
            .as_str()
            .unwrap_or_default()
            .contains("the user declined"),
        "{tool}"
    );
    assert!(
        !system_prompt(&server, 1).contains("中文"),
        "no reasoning line without agent.reasoning_language"
    );

    // Shift-tab walks the postures under their Chinese names, then plan mode.
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · 自动批准 · 正常模式");
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · Yolo批准 · 正常模式");
    pty.send("\x1b[Z");
    pty.wait_text("fake-model · Yolo批准 · 计划模式");
    pty.send("/status\r");
    pty.wait_text("批准姿态 yolo");
    assert!(pty.screen().contains("  上下文      "), "{}", pty.screen());
    pty.send("\x04");
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}\n{}", pty.screen());
}

#[test]
fn memory_rewind_goal_and_error_lines_speak_chinese_too() {
    let server = FakeOpenAI::start(vec![
        Reply::text("第一轮完成。"),
        Reply::text(
            "Worked on it.\n\n<goal-status>\nstate: complete\nsummary: 写好了\nverified: 测试\n</goal-status>",
        ),
    ]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "language = \"zh\"");
    reasonix::tool::memory_store::Store::new(home.join(".reasonix/memory"))
        .save("db-port", "The database listens on 5433.", Some("端口"))
        .expect("a saved fact");
    let mut cmd = reasonix(&home, work.path());
    cmd.arg("chat").env("FAKE_API_KEY", "k");
    let mut pty = Pty::spawn(cmd, 120, 32);
    pty.wait_text("fake-model · 需要批准 · 正常模式");

    pty.send("/rewind\r");
    pty.wait_text("没有可回退的：这个对话还没有任何一轮");

    // `/memory`: the list, its footer, forgetting.
    pty.send("/memory\r");
    pty.wait_text("记忆 · 1 条有效 · 0 条已归档");
    assert!(
        pty.screen().contains("enter 阅读 · f 忘记"),
        "{}",
        pty.screen()
    );
    pty.send("f");
    pty.wait_text("已忘记 `db-port`；归档为");
    pty.send("\x1b");
    pty.wait_text("有问题尽管问");

    // Error lines.
    pty.send("/goal --bogus x\r");
    pty.wait_text("/goal：未知选项 --bogus；请用 --research 或 --simple");
    pty.send("/nosuch\r");
    pty.wait_text("命令：未知命令 /nosuch；/help 列出所有命令");

    // `/rewind` after a turn: both questions and the notice.
    pty.send("hi\r");
    pty.wait_text("第一轮完成。");
    pty.wait_text("有问题尽管问");
    pty.send("/rewind\r");
    pty.wait_text("回退到哪一轮之前？");
    assert!(
        pty.screen().contains("对话将回到你所选那一轮之前。"),
        "{}",
        pty.screen()
    );
    pty.send("1");
    pty.wait_text("如何回退？");
    let screen = pty.screen();
    assert!(screen.contains("只回退对话"), "{screen}");
    assert!(screen.contains("取消"), "{screen}");
    pty.send("c");
    pty.wait_text("对话已回退到第 #1 轮之前；文件保持原样；那一轮的文字已放回输入框");

    // Goal mode: the start and completion notices.
    pty.send("\x15/goal --simple 写发布说明\r");
    pty.wait_text("目标完成：写好了；已验证：测试");
    let history = pty.vt.history();
    assert!(
        history.contains("目标模式（轻量）：模型持续工作"),
        "{history}"
    );
    assert!(!history.contains("goal mode"), "{history}");
    pty.send("\x04");
    let status = pty.wait_exit();
    assert!(status.success(), "{status:?}\n{}", pty.screen());
}

#[test]
fn the_locale_picks_chinese_when_the_config_says_nothing() {
    let server = FakeOpenAI::start(Vec::new());
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(&home, &server.base_url(), "");
    let doctor = |lang: &str, locale: &str| {
        let mut cmd = reasonix(&home, work.path());
        cmd.arg("doctor")
            .env("FAKE_API_KEY", "k")
            .env_remove("LC_ALL")
            .env_remove("LC_MESSAGES")
            .env("LANG", locale);
        if lang.is_empty() {
            cmd.env_remove("REASONIX_LANG");
        } else {
            cmd.env("REASONIX_LANG", lang);
        }
        run(&mut cmd)
    };
    let zh = doctor("", "zh_CN.UTF-8");
    let header = zh.stdout.lines().next().unwrap_or_default().to_string();
    assert!(
        header.starts_with("检查项") && header.contains("状态") && header.contains("详情"),
        "{zh:?}"
    );
    let row = |out: &crate::util::Run, check: &str| {
        out.stdout
            .lines()
            .find(|l| l.starts_with(&format!("{check} ")))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
            .join(" ")
    };
    assert!(row(&zh, "版本").starts_with("版本 通过 "), "{zh:?}");
    assert!(
        zh.stdout.contains("在环境变量 FAKE_API_KEY 中找到"),
        "{zh:?}"
    );
    assert!(row(&zh, "端点").contains("，耗时 "), "{zh:?}");
    // $REASONIX_LANG beats the locale.
    let en = doctor("en", "zh_CN.UTF-8");
    assert!(en.stdout.starts_with("CHECK"), "{en:?}");
    assert!(row(&en, "version").starts_with("version pass "), "{en:?}");
    let c = doctor("", "C.UTF-8");
    assert!(c.stdout.starts_with("CHECK"), "{c:?}");
}

#[test]
fn the_language_never_changes_what_the_model_sees() {
    let home = Dir::new();
    let work = Dir::new();
    work.write("a.txt", "alpha\n");
    let bodies = |language: &str| {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "read_file", r#"{"path":"a.txt"}"#)]),
            Reply::text("done"),
        ]);
        use_fake_provider(
            &home,
            &server.base_url(),
            &format!("language = \"{language}\""),
        );
        let out = run(reasonix(&home, work.path())
            .env("FAKE_API_KEY", "k")
            .args(["run", "read a.txt"]));
        assert_eq!(out.code, 0, "{out:?}");
        let bodies: Vec<Value> = server
            .wait_for_requests(2)
            .into_iter()
            .map(|r| r.body)
            .collect();
        bodies
    };
    let en = bodies("en");
    let zh = bodies("zh");
    assert_eq!(en.len(), 2);
    assert_eq!(
        serde_json::to_string(&en).unwrap(),
        serde_json::to_string(&zh).unwrap()
    );
    assert!(
        serde_json::to_string(&zh).unwrap().contains("alpha"),
        "the tool result reached the model"
    );
}

#[test]
fn reasoning_language_adds_one_fixed_line_and_the_prompt_stays_byte_stable() {
    const LINE: &str = "Write your reasoning (thinking) in Chinese (简体中文).";
    for setting in ["zh", "Chinese", "中文"] {
        let server = FakeOpenAI::start(vec![
            Reply::tool_calls(&[("c1", "ls", "{}")]),
            Reply::text("done"),
        ]);
        let home = Dir::new();
        let work = Dir::new();
        use_fake_provider(
            &home,
            &server.base_url(),
            &format!("\n[agent]\nreasoning_language = \"{setting}\""),
        );
        let out = run(reasonix(&home, work.path())
            .env("FAKE_API_KEY", "k")
            .args(["run", "list the files"]));
        assert_eq!(out.code, 0, "{out:?}");
        assert!(!out.stderr.contains("not supported"), "{out:?}");
        let first = system_prompt(&server, 1);
        assert_eq!(first.matches(LINE).count(), 1, "{setting}: {first}");
        assert_eq!(first, system_prompt(&server, 2), "the prompt changed");
    }
    let server = FakeOpenAI::start(vec![Reply::text("done")]);
    let home = Dir::new();
    let work = Dir::new();
    use_fake_provider(
        &home,
        &server.base_url(),
        "\n[agent]\nreasoning_language = \"en\"",
    );
    let out = run(reasonix(&home, work.path())
        .env("FAKE_API_KEY", "k")
        .args(["run", "hi"]));
    assert_eq!(out.code, 0, "{out:?}");
    let prompt = system_prompt(&server, 1);
    assert!(
        prompt.contains("Write your reasoning (thinking) in English."),
        "{prompt}"
    );
    assert!(!prompt.contains(LINE), "{prompt}");
}

/// `GET path` on the server: the status and the body.
fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read");
    let raw = String::from_utf8(raw).expect("UTF-8");
    let (head, body) = raw.split_once("\r\n\r\n").expect("a response head");
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok());
    (status.expect("a status"), body.to_string())
}

/// The message ids the page's script looks up: `t("id")` calls, and `t("prefix." + x)` calls
/// as `prefix.*`.
fn page_lookups(script: &str) -> Vec<String> {
    let call = regex_lite::Regex::new(r#"\bt\(\s*"([^"]*)"\s*(\+)?"#).unwrap();
    let mut ids: Vec<String> = call
        .captures_iter(script)
        .map(|c| {
            let id = c[1].to_string();
            if c.get(2).is_some() {
                format!("{id}*")
            } else {
                id
            }
        })
        .collect();
    ids.sort();
    ids.dedup();
    ids
}

#[test]
fn the_page_takes_every_string_from_the_catalog_in_the_chat_language() {
    let fake = FakeOpenAI::start(Vec::new());
    let server = crate::serve::start(&fake, "language = \"zh\"", &[]);
    let (status, body) = get(server.addr, "/api/messages");
    assert_eq!(status, 200, "{body}");
    let catalog: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(catalog["lang"], "zh", "{catalog}");
    let messages = catalog["messages"].as_object().expect("messages");
    assert_eq!(messages["login.submit"], "登录");
    assert_eq!(messages["mode.ask"], "需要批准");
    assert_eq!(messages["mode.planning"], "计划模式");
    assert_eq!(messages["approval.title"], "允许 {tool}？");
    let (_, page) = get(server.addr, "/");
    assert!(page.contains("<html lang=\"zh\">"), "{page}");

    // Every lookup of the page's script names a catalog string; a lookup with a computed
    // suffix must be one of those listed here, with each suffix it can take.
    let (_, script) = get(server.addr, "/app.js");
    assert!(
        !script.contains("MESSAGES = {\n"),
        "a string table in app.js"
    );
    let dynamic: &[(&str, &[&str])] = &[("mode.*", &["ask", "auto", "yolo"])];
    let lookups = page_lookups(&script);
    assert!(lookups.len() > 30, "{lookups:?}");
    let mut used = Vec::new();
    for id in &lookups {
        match id.strip_suffix('*') {
            Some(prefix) => {
                let (_, suffixes) = dynamic
                    .iter()
                    .find(|(d, _)| d == id)
                    .unwrap_or_else(|| panic!("app.js looks up `{id}`: list its suffixes here"));
                used.extend(suffixes.iter().map(|s| format!("{prefix}{s}")));
            }
            None => used.push(id.clone()),
        }
    }
    for id in &used {
        assert!(
            messages.contains_key(id),
            "app.js uses `{id}`, which is not in the catalog (src/i18n/page.rs)"
        );
    }
    for id in messages.keys() {
        assert!(
            used.contains(id),
            "the catalog's page string `{id}` is unused"
        );
    }

    // $REASONIX_LANG (set to `en` for every test) speaks when the config says nothing.
    let server = crate::serve::start(&fake, "", &[]);
    let (_, body) = get(server.addr, "/api/messages");
    let catalog: Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(catalog["lang"], "en", "{catalog}");
    assert_eq!(catalog["messages"]["login.submit"], "Log in");
    assert!(get(server.addr, "/").1.contains("<html lang=\"en\">"));
}
