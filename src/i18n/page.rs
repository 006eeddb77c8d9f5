//! The browser page's share of the catalog: which catalog key each message id of
//! `src/serve/page/app.js` (`t("login.submit")`) stands for, and that table in one language as
//! the JSON object the server hands the page, so the page has no strings of its own.

use serde_json::{Map, Value};

use super::Ui::{self, *};
use super::{text, Lang};

/// The page's message ids with their catalog keys.
pub const PAGE: &[(&str, Ui)] = &[
    ("login.password", PageLoginPassword),
    ("login.token", PageLoginToken),
    ("login.submit", PageLoginSubmit),
    ("login.wrong", PageLoginWrong),
    ("login.limited", PageLoginLimited),
    ("sessions.new", PageSessionsNew),
    ("sessions.live", PageSessionsLive),
    ("sessions.stored", PageSessionsStored),
    ("sessions.untitled", PageSessionsUntitled),
    ("composer.placeholder", PageComposerPlaceholder),
    ("composer.send", PageComposerSend),
    ("composer.interrupt", PageComposerInterrupt),
    ("approval.title", PageApprovalTitle),
    ("approval.once", PageApprovalOnce),
    ("approval.session", PageApprovalSession),
    ("approval.always", PageApprovalAlways),
    ("approval.deny", PageApprovalDeny),
    ("ask.title", PageAskTitle),
    ("ask.answer", PageAskAnswer),
    ("ask.dismiss", PageAskDismiss),
    ("plan.title", PagePlanTitle),
    ("plan.approve", PagePlanApprove),
    ("plan.approve_edits", PagePlanApproveEdits),
    ("plan.keep", PagePlanKeep),
    ("plan.feedback", PagePlanFeedback),
    ("tool.running", PageToolRunning),
    ("turn.interrupted", PageTurnInterrupted),
    ("turn.error", PageTurnError),
    ("server.shutdown", PageServerShutdown),
    ("stream.refused", PageStreamRefused),
    ("readonly.notice", PageReadOnly),
    ("diff.none", PageDiffNone),
    ("diff.more", PageDiffMore),
    ("status.tokens", PageStatusTokens),
    ("status.cache", PageStatusCache),
    ("status.context", PageStatusContext),
    ("status.cost", PageStatusCost),
    ("error.request", PageErrorRequest),
    ("mode.posture", PageModePosture),
    ("mode.ask", PageModeAsk),
    ("mode.auto", PageModeAuto),
    ("mode.yolo", PageModeYolo),
    ("mode.planning", PageModePlanning),
    ("mode.changed", PageModeChanged),
    ("mode.plan_on", PageModePlanOn),
    ("mode.plan_off", PageModePlanOff),
    ("model.label", PageModelLabel),
    ("model.changed", PageModelChanged),
    ("composition.label", PageCompositionLabel),
    ("composition.locked", PageCompositionLocked),
    ("composition.bound", PageCompositionBound),
    ("command.clear_confirm", PageCommandClearConfirm),
    ("session.replaced", PageSessionReplaced),
    ("tool.waiting", PageToolWaiting),
    ("title.rename", PageTitleRename),
    ("title.hint", PageTitleHint),
    ("empty.heading", PageEmptyHeading),
    ("empty.workspace", PageEmptyWorkspace),
    ("empty.model", PageEmptyModel),
    ("empty.example1", PageEmptyExample1),
    ("empty.example2", PageEmptyExample2),
    ("empty.example3", PageEmptyExample3),
];

/// `{"lang": "zh", "messages": {id: text, …}}`: the page's strings in `lang`.
pub fn messages(lang: Lang) -> Value {
    let messages: Map<String, Value> = PAGE
        .iter()
        .map(|(id, key)| (id.to_string(), Value::from(text(lang, *key))))
        .collect();
    serde_json::json!({ "lang": lang.tag(), "messages": messages })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_key_has_one_message_id_and_every_id_is_unique() {
        for key in Ui::ALL {
            let named = PAGE.iter().filter(|(_, k)| k == key).count();
            let page = format!("{key:?}").starts_with("Page");
            assert_eq!(named, usize::from(page), "{key:?} named {named} times");
        }
        for (id, _) in PAGE {
            assert_eq!(PAGE.iter().filter(|(i, _)| i == id).count(), 1, "{id}");
        }
    }

    #[test]
    fn the_json_carries_the_language_and_its_texts() {
        let zh = messages(Lang::Zh);
        assert_eq!(zh["lang"], "zh");
        assert_eq!(zh["messages"]["approval.deny"], "拒绝");
        assert_eq!(zh["messages"]["mode.ask"], "需要批准");
        let en = messages(Lang::En);
        assert_eq!(en["lang"], "en");
        assert_eq!(en["messages"]["approval.title"], "Allow {tool}?");
        assert_eq!(en["messages"].as_object().map(Map::len), Some(PAGE.len()));
    }
}
