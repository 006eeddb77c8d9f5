"""The read-only view of a conversation whose binding cannot run here, in a real headless
Chromium. Started by tests/serve_page.rs against a server whose workspace holds one stored
conversation (SESSION) bound to `user:eye`, which needs a vision model the configuration no
longer marks: opening it from the sidebar shows its transcript, disables the composer with one
line naming the binding and the fix, and a new conversation takes prompts again.

Usage: read_only_view.py URL SESSION SCREENSHOT
"""

import sys

from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import WebDriverWait

from chromium import browser

URL, SESSION, SCREENSHOT = sys.argv[1], sys.argv[2], sys.argv[3]


def click(driver, css):
    try:
        driver.find_element(By.CSS_SELECTOR, css).click()
        return True
    except (NoSuchElementException, StaleElementReferenceException):
        return False


def main():
    driver = browser()
    # Generous: the server is a debug build on a shared machine; waits end once they hold.
    wait = WebDriverWait(driver, 60)
    try:
        driver.get(URL)
        wait.until(ec.element_to_be_clickable((By.ID, "prompt")))
        # The page opens a new conversation first; it is listed once that is done.
        wait.until(ec.presence_of_element_located((By.CSS_SELECTOR, "#live-list button")))
        # The sidebar's lists are redrawn when the page's first conversation opens, which can
        # replace an entry between finding and clicking it: retry until a click lands.
        wait.until(lambda d: click(d, '#stored-list button[title="%s"]' % SESSION))
        line = wait.until(ec.visibility_of_element_located((By.ID, "read-only")))
        for part in ["user:eye", "vision", "agent_composition.unavailable", "new conversation"]:
            assert part in line.text, "the line lacks %r: %r" % (part, line.text)
        wait.until(ec.text_to_be_present_in_element((By.ID, "transcript"), "seen it"))
        for control in ["prompt", "send"]:
            assert not driver.find_element(By.ID, control).is_enabled(), control + " is enabled"
        driver.save_screenshot(SCREENSHOT)
        # A new conversation is an ordinary one again.
        driver.find_element(By.ID, "new-session").click()
        wait.until(ec.element_to_be_clickable((By.ID, "prompt")))
        wait.until(ec.invisibility_of_element_located((By.ID, "read-only")))
        print("read-only view: ok")
    finally:
        driver.quit()


main()
