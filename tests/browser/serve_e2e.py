"""End-to-end test of the `reasonix serve` page in a real headless Chromium, driven with
Selenium. Started by tests/serve.rs (`browser_end_to_end`) against a running server whose
fake model answers, in order: a greeting, an edit_file call (of note.txt, which the test
writes as "alpha", "beta", "gamma"; "beta" becomes "approved") then "wrote it", and a request
that never answers (to be interrupted), which goes to the second model picked in the page
after `/help` was typed (the test checks the model of that request).

URL is the one the server printed, with this run's token: the page without it asks for the
token (a wrong one is refused); with it, the token is traded for a cookie and leaves the
address bar.

Usage: serve_e2e.py URL SCREENSHOT
"""

import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

from chromium import browser

URL, SCREENSHOT = sys.argv[1], sys.argv[2]
BASE = URL.split("?", 1)[0]

# The diff of the edit as the page must show it, in the approval and in the result: the
# server's hunk header, then (kind, line number, sign and text) for each line.
EDIT_DIFF = [
    ("hunk", "", "@@ -1,3 +1,3 @@"),
    ("keep", "1", "  alpha"),
    ("del", "2", "- beta"),
    ("add", "2", "+ approved"),
    ("keep", "3", "  gamma"),
]


def diff_rows(driver, container):
    """The rows of the diff in `container` as in EDIT_DIFF, read from the DOM."""
    return [
        tuple(row)
        for row in driver.execute_script(
            """return [...arguments[0].querySelectorAll(".diff > span")].map(s => {
                const ln = s.querySelector(".ln");
                return [s.className, ln ? ln.textContent : "", ln ? s.lastChild.textContent : s.textContent];
            });""",
            container,
        )
    ]




def main():
    driver = browser()
    # Generous: the server is a debug build on a shared machine. Waits end as soon as the
    # condition holds.
    wait = WebDriverWait(driver, 60)
    try:
        # Without the token the page asks for it, and a wrong one is refused.
        driver.get(BASE)
        secret = wait.until(ec.visibility_of_element_located((By.ID, "secret")))
        secret.send_keys("wrong")
        secret.send_keys(Keys.ENTER)
        wait.until(ec.text_to_be_present_in_element((By.ID, "login-error"), "Wrong"))
        # The printed URL logs in: its token becomes an HttpOnly cookie and leaves the address.
        driver.get(URL)
        prompt = wait.until(ec.visibility_of_element_located((By.ID, "prompt")))
        assert "token" not in driver.current_url, driver.current_url
        assert "reasonix_session" not in driver.execute_script("return document.cookie"), "the cookie is HttpOnly"
        wait.until(lambda d: d.find_element(By.ID, "session-title").text.strip() != "")

        # A prompt, and its streamed answer.
        prompt.send_keys("hello")
        prompt.send_keys(Keys.ENTER)
        wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, ".msg.assistant"), "Hello from the fake model"))
        # The turn is over once Interrupt is disabled again (a prompt sent earlier gets 409).
        interrupt = driver.find_element(By.ID, "interrupt")
        wait.until(lambda d: not interrupt.is_enabled())
        wait.until(lambda d: "tokens" in d.find_element(By.ID, "status").text)

        # An edit waits for approval; the card shows the diff of the real file, with line
        # numbers; approve it with the keyboard.
        prompt.send_keys("edit the note")
        prompt.send_keys(Keys.ENTER)
        card = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, ".card.approval")))
        rows = diff_rows(driver, card)
        assert rows == EDIT_DIFF, "the approval's diff: %r" % rows
        path = card.find_element(By.CSS_SELECTOR, ".diff").get_attribute("data-path")
        assert path == "note.txt", path
        button = card.find_element(By.CSS_SELECTOR, 'button[data-answer="once"]')
        assert driver.switch_to.active_element == button, "the approval's first choice has focus"
        button.send_keys("y")
        wait.until(lambda d: d.find_element(By.CSS_SELECTOR, ".card.approval").get_attribute("data-answered") == "true")
        wait.until(lambda d: any("wrote it" in m.text for m in d.find_elements(By.CSS_SELECTOR, ".msg.assistant")))
        wait.until(lambda d: not interrupt.is_enabled())
        # The result shows what the call did to the file, from snapshots around it; it came
        # before "wrote it" in the same stream, so it is in the page by now.
        tool = driver.find_element(By.CSS_SELECTOR, '.card.tool[data-tool="edit_file"]')
        assert tool.find_elements(By.CSS_SELECTOR, ".diff"), "the edit's result shows no diff: " + tool.text
        rows = diff_rows(driver, tool)
        assert rows == EDIT_DIFF, "the result's diff: %r" % rows

        # The model picker: the next turn goes to the other model (the test checks the request).
        picker = Select(driver.find_element(By.ID, "model"))
        names = [o.get_attribute("value") for o in picker.options]
        assert "fake/fake-model" in names and "other/other-model" in names, names
        assert picker.first_selected_option.get_attribute("value") == "fake/fake-model"
        picker.select_by_value("other/other-model")
        wait.until(lambda d: any("other/other-model" in n.text for n in d.find_elements(By.CSS_SELECTOR, ".notice")))

        # A slash command runs on the server and its answer is shown; nothing goes to the model.
        prompt.send_keys("/help")
        prompt.send_keys(Keys.ENTER)
        help_text = wait.until(ec.visibility_of_element_located((By.CSS_SELECTOR, '.command[data-command="help"] pre')))
        assert "/model" in help_text.text and "/compact" in help_text.text, help_text.text
        assert prompt.get_attribute("value") == "", "the composer is emptied after a command"

        # A turn that hangs, interrupted with the button.
        prompt.send_keys("wait forever")
        prompt.send_keys(Keys.ENTER)
        wait.until(lambda d: interrupt.is_enabled())
        interrupt.click()
        wait.until(lambda d: any("Interrupted" in n.text for n in d.find_elements(By.CSS_SELECTOR, ".notice")))
        wait.until(lambda d: not interrupt.is_enabled())

        # Phone width: the page still fits without horizontal scrolling.
        driver.set_window_size(390, 844)
        width = driver.execute_script("return document.documentElement.scrollWidth")
        viewport = driver.execute_script("return window.innerWidth")
        assert width <= viewport, (width, viewport)
        driver.set_window_size(1100, 900)
        # The screenshot is for a person to look at: it shows the edit's tool card (its diff
        # and result) at the top, the approval card with the same diff below it, and the
        # turns after. Centred, the card could not be shown: less than half a screen follows.
        driver.execute_script('arguments[0].scrollIntoView({block: "start"})', tool)
        driver.save_screenshot(SCREENSHOT)
        print("browser e2e: ok")
    finally:
        driver.quit()


if __name__ == "__main__":
    main()
