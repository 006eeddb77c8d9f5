"""The polish of the `reasonix serve` page, checked in a real headless Chromium driven with
Selenium (issue 35.5). Started by tests/serve_page.rs (`the_page_is_polished_in_a_real_browser`)
against a running server whose fake model answers, in order: a text with an aligned code
block (to the example prompt clicked in the empty state), an edit_file call of note.txt
("beta" becomes "approved") then "wrote it", and a read_file call of table.txt (aligned
columns) then "read it".

Checks, by DOM text and order: the empty state (workspace, model, three examples that fill
the composer), the title from the first prompt and its rename, "waiting for approval" in the
tool card, the approval inside the tool card and replaced by the result (one diff), monospace
output that keeps its alignment, labels not cut off at 1100 and 390 px, the favicon. Saves
screenshots at both widths into SHOT_DIR and prints their paths.

Usage: page_polish.py URL WORKSPACE SHOT_DIR
URL is the one `reasonix serve` prints on its first line (with its token, if any).
"""

import os
import sys

from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from chromium import browser

URL, WORKSPACE, SHOT_DIR = sys.argv[1], sys.argv[2], sys.argv[3]

# The labels that must show whole wherever they are visible.
LABELS = [
    "new-session",
    "rename",
    "posture-label",
    "planning-label",
    "composition-label",
    "model-label",
    "send",
    "interrupt",
]




def resize(driver, width):
    """Sets the viewport (not the window) to `width` CSS pixels wide."""
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": 900 if width > 500 else 844, "deviceScaleFactor": 1, "mobile": False},
    )
    assert driver.execute_script("return window.innerWidth") == width


def cut_labels(driver):
    """The visible labels (and select boxes) whose text is clipped or leaves the viewport."""
    return driver.execute_script(
        """const cut = [];
        const width = window.innerWidth;
        const check = (node, name) => {
            const box = node.getBoundingClientRect();
            if (!box.width || node.closest("[hidden]") || node.closest(".sidebar:not(.open)") && width <= 700) return;
            if (box.left < 0 || box.right > width + 0.5) cut.push(name + ": outside the viewport " + box.left + ".." + box.right);
            else if (node.scrollWidth > node.clientWidth + 1) cut.push(name + ": clipped " + node.scrollWidth + ">" + node.clientWidth);
        };
        for (const id of arguments[0]) check(document.getElementById(id), "#" + id);
        for (const select of document.querySelectorAll(".topbar select, .pickers select")) {
            // A select shows its chosen option: it must be wide enough for that text.
            const probe = document.createElement("span");
            probe.style.cssText = "position:absolute;visibility:hidden;white-space:pre;font:" + getComputedStyle(select).font;
            probe.textContent = select.options[select.selectedIndex] ? select.options[select.selectedIndex].text : "";
            document.body.append(probe);
            const need = probe.getBoundingClientRect().width;
            probe.remove();
            check(select, "#" + select.id);
            // Room for the arrow: the text must fit in the box less about 1.5em.
            const room = select.getBoundingClientRect().width - 20;
            if (need > room + 0.5) cut.push("#" + select.id + ": option text " + need + " in " + room);
        }
        return cut;""",
        LABELS,
    )


def visible(driver, css):
    return [n for n in driver.find_elements(By.CSS_SELECTOR, css) if n.is_displayed()]


def main():
    os.makedirs(SHOT_DIR, exist_ok=True)
    driver = browser()
    # Generous: the server is a debug build on a shared machine. Waits end as soon as the
    # condition holds.
    wait = WebDriverWait(driver, 60)
    shots = []

    def shot(name):
        path = os.path.join(SHOT_DIR, name)
        driver.save_screenshot(path)
        shots.append(path)

    try:
        resize(driver, 1100)
        driver.get(URL)
        prompt = wait.until(ec.visibility_of_element_located((By.ID, "prompt")))

        # 7. The favicon: linked, and served (no 404).
        icon = driver.find_element(By.CSS_SELECTOR, 'link[rel="icon"]').get_attribute("href")
        served = driver.execute_script(
            "return fetch(arguments[0]).then(r => [r.status, r.headers.get('content-type')])", icon
        )
        assert served == [200, "image/svg+xml"], (icon, served)
        ico = driver.execute_script("return fetch('/favicon.ico').then(r => r.status)")
        assert ico == 200, ico

        # 2. The empty state: workspace, model, three examples; a click fills the composer.
        empty = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, "#transcript .empty")))
        assert empty.find_element(By.CSS_SELECTOR, ".workspace").text == WORKSPACE, empty.text
        wait.until(lambda d: empty.find_element(By.CSS_SELECTOR, ".model").text == "fake/fake-model")
        examples = empty.find_elements(By.CSS_SELECTOR, "button.example")
        assert len(examples) == 3 and all(e.text.strip() for e in examples), [e.text for e in examples]
        assert driver.find_element(By.ID, "session-title").text.strip() != "", "an untitled conversation says so"
        assert cut_labels(driver) == [], cut_labels(driver)
        shot("page-empty-1100.png")
        first = examples[0].text
        examples[0].click()
        assert prompt.get_attribute("value") == first, prompt.get_attribute("value")
        prompt.send_keys(Keys.ENTER)

        # 1. The conversation is titled by its first prompt, here and in the list.
        wait.until(lambda d: any("aligned" in m.text for m in d.find_elements(By.CSS_SELECTOR, ".msg.assistant")))
        assert not driver.find_elements(By.CSS_SELECTOR, "#transcript .empty"), "the empty state goes"
        wait.until(lambda d: d.find_element(By.ID, "session-title").text == first)
        wait.until(lambda d: first in [b.text for b in d.find_elements(By.CSS_SELECTOR, "#live-list button")])
        interrupt = driver.find_element(By.ID, "interrupt")
        wait.until(lambda d: not interrupt.is_enabled())

        # 5. Code in a monospace font with its alignment kept.
        code = driver.find_element(By.CSS_SELECTOR, ".msg.assistant pre")
        assert "name     size\nalpha      10" in code.get_attribute("textContent"), code.get_attribute("textContent")

        # 3 and 4. The edit waits for approval in its own card: the card says so, and the
        # approval sits between the call and its output.
        prompt.send_keys("edit the note")
        prompt.send_keys(Keys.ENTER)
        approval = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".card.approval")))
        tool = driver.find_element(By.CSS_SELECTOR, '.card.tool[data-tool="edit_file"]')
        output = tool.find_element(By.CSS_SELECTOR, ".output")
        assert output.get_attribute("data-state") == "waiting", output.get_attribute("data-state")
        assert "approval" in output.text and "running" not in output.text, output.text
        order = driver.execute_script(
            "return [...arguments[0].children].filter(c => !c.hidden).map(c => c.className || c.tagName)", tool
        )
        assert order == ["H3", "card approval", "output"], order
        assert len(visible(driver, "#transcript .diff")) == 1, "one diff while it waits"
        shot("page-approval-1100.png")
        approval.find_element(By.CSS_SELECTOR, 'button[data-answer="once"]').click()
        wait.until(lambda d: any("wrote it" in m.text for m in d.find_elements(By.CSS_SELECTOR, ".msg.assistant")))
        wait.until(lambda d: not interrupt.is_enabled())
        # The result replaced the approval: one diff, in the tool card, then the output.
        assert not visible(driver, ".card.approval"), "the answered approval is gone"
        diffs = visible(driver, "#transcript .diff")
        assert len(diffs) == 1, "the diff shows once, not %d times" % len(diffs)
        order = driver.execute_script(
            "return [...arguments[0].children].filter(c => !c.hidden).map(c => c.className || c.tagName)", tool
        )
        assert order == ["H3", "diff", "output"], order
        assert output.get_attribute("data-state") == "done" and "approval" not in output.text, output.text
        kinds = [m.get_attribute("class") for m in driver.find_elements(By.CSS_SELECTOR, "#transcript > *")]
        assert kinds[-3:] == ["msg user", "card tool", "msg assistant"], kinds

        # 5. Tool output in a monospace font with its alignment kept.
        prompt.send_keys("read the table")
        prompt.send_keys(Keys.ENTER)
        wait.until(lambda d: any("read it" in m.text for m in d.find_elements(By.CSS_SELECTOR, ".msg.assistant")))
        wait.until(lambda d: not interrupt.is_enabled())
        table = driver.find_element(By.CSS_SELECTOR, '.card.tool[data-tool="read_file"] .output')
        text = table.get_attribute("textContent")
        assert "name     size" in text and "alpha      10" in text, text
        style = driver.execute_script(
            """const s = getComputedStyle(arguments[0]);
            const width = (chars) => { const p = document.createElement("span"); p.textContent = chars;
                arguments[0].append(p); const w = p.getBoundingClientRect().width; p.remove(); return w; };
            return [s.whiteSpace, width("iiiiiiiiii") === width("MMMMMMMMMM")];""",
            table,
        )
        assert style[0] in ("pre", "pre-wrap") and style[1], "tool output is not monospace: %r" % style

        # 1. Rename: double-click the title, type, Enter; the server keeps it (a reload shows it).
        ActionChains(driver).double_click(driver.find_element(By.ID, "session-title")).perform()
        edit = wait.until(ec.visibility_of_element_located((By.ID, "title-edit")))
        assert edit.get_attribute("value") == first
        edit.send_keys(Keys.CONTROL, "a")
        edit.send_keys("Polish the page")
        edit.send_keys(Keys.ENTER)
        wait.until(lambda d: d.find_element(By.ID, "session-title").text == "Polish the page")
        driver.refresh()
        wait.until(lambda d: d.find_element(By.ID, "session-title").text == "Polish the page")
        wait.until(lambda d: "Polish the page" in [b.text for b in d.find_elements(By.CSS_SELECTOR, "#live-list button")])
        wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '.card.tool[data-tool="read_file"]'))

        # 6. Nothing cut off at either width; a screenshot of each for a person to look at.
        assert cut_labels(driver) == [], cut_labels(driver)
        driver.execute_script(
            'arguments[0].scrollIntoView({block: "start"})',
            driver.find_element(By.CSS_SELECTOR, '.card.tool[data-tool="edit_file"]'),
        )
        shot("page-1100.png")
        resize(driver, 390)
        wait.until(lambda d: d.execute_script("return document.documentElement.scrollWidth") <= 390)
        # The narrow layout slides the sidebar off screen in 150 ms; a screenshot taken sooner
        # shows its edge over the page.
        wait.until(lambda d: d.execute_script(
            "return document.querySelector('.sidebar').getBoundingClientRect().right <= 0"))
        assert cut_labels(driver) == [], cut_labels(driver)
        shot("page-390.png")
        for path in shots:
            print("screenshot: " + path)
        print("page polish: ok")
    except Exception:
        # What the page showed when a check failed, for the report.
        shot("failure.png")
        print("failure screenshot: " + shots[-1])
        print("transcript: " + driver.find_element(By.ID, "transcript").text)
        raise
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
