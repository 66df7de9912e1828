"""The operator console's flows in a real browser: headless Chromium driven by Selenium (PyPI
`selenium`, in the venv of host/sluice-mcp/clients/install.sh) through the distribution's
`chromedriver`, started on a free port the Rust test chose.

Usage: `python flows.py` with one JSON object on stdin:

    {"flow": NAME, "chromedriver": "/usr/bin/chromedriver", "port": PORT,
     "chromium": "/usr/bin/chromium", "base": "http://127.0.0.1:PORT", "token": "...",
     "screenshot": "/path/NAME.png", ...}

plus the flow's own keys (see each flow). It prints one JSON line: the facts the flow saw
(texts, marks, counts, statuses), for the Rust test (host/sluice/tests/all/console) to assert
exactly. A condition that does not hold within WAIT seconds fails with what the page showed.
Each flow saves a screenshot of where it ended at `screenshot`, also when it failed.
"""

import json
import re
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

# How long a condition may take (a loaded machine; nothing is asserted about this time).
WAIT = 60

# Everything a message of the transcript shows, for the Rust side to compare with the API.
MESSAGES_JS = """
return Array.from(document.querySelectorAll('#transcript li.message')).map(li => {
  const text = sel => { const e = li.querySelector(sel); return e ? e.textContent : null; };
  const mark = li.querySelector('.mark');
  return {
    seq: Number(li.dataset.seq),
    role: li.dataset.role,
    roleText: text('.role'),
    size: text('.size'),
    content: text('pre.content'),
    mark: mark ? mark.dataset.mark : null,
    markText: mark ? mark.textContent : null,
    showOriginal: li.querySelector('button.show-original') !== null,
    toolCalls: Array.from(li.querySelectorAll('.tool-call')).map(c => ({
      id: c.dataset.callId,
      name: (c.querySelector('.tool-name') || {}).textContent,
      arguments: (c.querySelector('pre.arguments') || {}).textContent,
    })),
  };
});
"""


def main():
    cfg = json.load(sys.stdin)
    flow = FLOWS[cfg["flow"]]
    options = webdriver.ChromeOptions()
    options.binary_location = cfg["chromium"]
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1280,900"):
        options.add_argument(arg)
    # The browser's console, to see Content-Security-Policy violations.
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The distribution's chromedriver, by path: Selenium Manager never runs, nothing is
    # downloaded.
    service = Service(executable_path=cfg["chromedriver"], port=cfg["port"])
    driver = webdriver.Chrome(service=service, options=options)
    try:
        driver.set_script_timeout(WAIT)
        facts = flow(driver, cfg)
        facts["console"] = [e["message"] for e in driver.get_log("browser")]
        print(json.dumps(facts))
    finally:
        driver.save_screenshot(cfg["screenshot"])
        driver.quit()


def wait(driver, what, condition):
    """Waits until `condition(driver)` is truthy (and returns it); fails naming `what`."""
    try:
        return WebDriverWait(driver, WAIT, poll_frequency=0.1).until(lambda d: condition(d))
    except TimeoutException:
        raise AssertionError(f"waited {WAIT} s for {what}; the page: {json.dumps(page(driver))}")


def page(driver):
    """Where the page is, for failure messages."""
    return driver.execute_script("""
      const v = document.querySelector('#view [data-view]');
      const e = document.querySelector('#error');
      return {hash: location.hash, view: v && v.dataset.view, ready: v && v.dataset.ready,
              error: e && e.textContent, text: document.body.innerText.slice(0, 2000)};
    """)


def one(driver, css):
    """The element `css` selects, once there is one."""
    return wait(driver, css, lambda d: (d.find_elements(By.CSS_SELECTOR, css) or [None])[0])


def ready(driver, view):
    """Waits until the current view is `view` with its data loaded."""
    one(driver, f'#view [data-view="{view}"][data-ready="true"]')


def text_of(driver, css):
    return driver.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", css)


def run_ended(driver):
    """The final status of the live view's run, once it has one."""
    status = text_of(driver, "#run-status")
    return status if status not in (None, "running", "connecting") else None


def go(driver, hash_):
    driver.execute_script("location.hash = arguments[0];", hash_)


def sign_in(driver, cfg):
    driver.get(cfg["base"] + "/")
    one(driver, "form#signin input#token").send_keys(cfg["token"])
    driver.find_element(By.CSS_SELECTOR, "button#signin-submit").click()
    ready(driver, "sessions")


def messages(driver):
    return driver.execute_script(MESSAGES_JS)


def scroll_to_tool(driver, tool):
    """Scrolls the first observation of `tool` to the top, for the screenshot."""
    driver.execute_script("""
      const li = Array.from(document.querySelectorAll('#transcript li.message[data-role="tool"]'))
        .find(li => (li.querySelector('.tool-name') || {}).textContent === arguments[0]);
      if (li) li.scrollIntoView({block: 'start'});
    """, tool)


def open_session(driver, session):
    go(driver, f"#/sessions/{session}")
    one(driver, f'#view [data-view="session"][data-ready="true"] #transcript li.message')


def flow_signin(driver, cfg):
    """A wrong token is refused; the right one shows the sessions."""
    driver.get(cfg["base"] + "/")
    token = one(driver, "form#signin input#token")
    facts = {"tokenType": token.get_attribute("type")}
    token.send_keys("wrong-" + cfg["token"])
    driver.find_element(By.CSS_SELECTOR, "button#signin-submit").click()
    facts["refused"] = wait(driver, "#signin-error", lambda d: text_of(d, "#signin-error"))
    facts["refusedView"] = page(driver)["view"]
    facts["refusedStored"] = driver.execute_script("return sessionStorage.getItem('sluice.token');")
    token = driver.find_element(By.CSS_SELECTOR, "input#token")
    token.clear()
    token.send_keys(cfg["token"])
    driver.find_element(By.CSS_SELECTOR, "button#signin-submit").click()
    ready(driver, "sessions")
    facts.update(driver.execute_script("""
      return {hash: location.hash, url: location.href, cookie: document.cookie,
              stored: sessionStorage.getItem('sluice.token'),
              local: localStorage.length,
              nav: Array.from(document.querySelectorAll('nav#nav a')).map(a => a.getAttribute('href')),
              signout: document.querySelector('nav#nav button#signout') !== null};
    """))
    return facts


def flow_live(driver, cfg):
    """A new session with the default model from #/new, watched live to its end."""
    sign_in(driver, cfg)
    driver.find_element(By.CSS_SELECTOR, 'nav#nav a[href="#/new"]').click()
    ready(driver, "new")
    Select(driver.find_element(By.CSS_SELECTOR, "select#prompt-session")).select_by_value("")
    model = Select(driver.find_element(By.CSS_SELECTOR, "select#prompt-model"))
    facts = {"models": [o.get_attribute("value") for o in model.options],
             "model": model.first_selected_option.get_attribute("value")}
    driver.find_element(By.CSS_SELECTOR, "textarea#prompt-text").send_keys(cfg["prompt"])
    driver.find_element(By.CSS_SELECTOR, "button#prompt-submit").click()
    live = wait(driver, "the live view's address",
                lambda d: re.fullmatch(r"#/sessions/([^/?]+)/live\?run=(.+)",
                                       d.execute_script("return location.hash;")))
    facts["session"], facts["run"] = live.group(1), live.group(2)
    ready(driver, "live")
    facts["status"] = wait(driver, "#run-status to end", run_ended)
    facts["events"] = driver.execute_script(
        "return Array.from(document.querySelectorAll('ol#events li.event')).map(e => e.dataset.type);")
    facts["cancelDisabled"] = driver.find_element(By.CSS_SELECTOR, "button#run-cancel").get_attribute("disabled") is not None
    return facts


def flow_paged(driver, cfg):
    """A session's transcript: every message as shown, with the marks."""
    sign_in(driver, cfg)
    open_session(driver, cfg["session"])
    facts = {"messages": messages(driver), "range": text_of(driver, "#transcript-range"),
             "sessionStatus": text_of(driver, "#session-status")}
    scroll_to_tool(driver, "read_file")
    return facts


def flow_shrunk(driver, cfg):
    """A shrunk observation shows its original from the audit on demand."""
    sign_in(driver, cfg)
    open_session(driver, cfg["session"])
    facts = {"messages": messages(driver)}
    facts["originalBefore"] = len(driver.find_elements(By.CSS_SELECTOR, "#transcript pre.original"))
    driver.find_element(By.CSS_SELECTOR,
                        '#transcript li.message:has(.mark[data-mark="shrunk"]) button.show-original').click()
    original = one(driver, "#transcript pre.original")
    facts["original"] = original.get_attribute("textContent")
    facts["originalSeq"] = driver.execute_script(
        "return Number(arguments[0].closest('li.message').dataset.seq);", original)
    driver.execute_script("arguments[0].closest('li.message').scrollIntoView({block: 'start'});",
                          original)
    return facts


def flow_approvals(driver, cfg):
    """Approves the first session's call and denies the second's."""
    sign_in(driver, cfg)
    driver.find_element(By.CSS_SELECTOR, 'nav#nav a[href="#/approvals"]').click()
    ready(driver, "approvals")
    approve, deny = cfg["approve"], cfg["deny"]
    for s in (approve, deny):
        one(driver, f'ul#approvals li.approval[data-session="{s}"]')
    facts = {"listed": driver.execute_script("""
      return Array.from(document.querySelectorAll('ul#approvals li.approval')).map(li => ({
        session: li.dataset.session, callId: li.dataset.callId,
        tool: li.querySelector('.tool-name').textContent,
        arguments: li.querySelector('pre.arguments').textContent}));
    """), "emptyShown": len(driver.find_elements(By.CSS_SELECTOR, "#approvals-empty"))}
    results = {}
    for session, button in ((approve, "approve"), (deny, "deny")):
        item = f'ul#approvals li.approval[data-session="{session}"]'
        driver.find_element(By.CSS_SELECTOR, f"{item} button.{button}").click()
        # "approving…" while the decision and the resume are under way.
        results[button] = wait(driver, f"{item} .approval-result",
                               lambda d: (lambda t: t if t and not t.endswith("…") else None)(
                                   text_of(d, f"{item} .approval-result")))
    facts["results"] = results
    return facts


def flow_cancel(driver, cfg):
    """A slow run started from the console, cancelled from its live view."""
    sign_in(driver, cfg)
    go(driver, "#/new")
    ready(driver, "new")
    driver.find_element(By.CSS_SELECTOR, "textarea#prompt-text").send_keys(cfg["prompt"])
    driver.find_element(By.CSS_SELECTOR, "button#prompt-submit").click()
    ready(driver, "live")
    one(driver, 'ol#events li.event[data-type="model_request"]')
    facts = {"statusBefore": text_of(driver, "#run-status"),
             "hash": driver.execute_script("return location.hash;")}
    driver.find_element(By.CSS_SELECTOR, "button#run-cancel").click()
    facts["status"] = wait(driver, "#run-status to end", run_ended)
    facts["events"] = driver.execute_script(
        "return Array.from(document.querySelectorAll('ol#events li.event')).map(e => e.dataset.type);")
    facts["cancelDisabled"] = wait(
        driver, "#run-cancel disabled",
        lambda d: d.find_element(By.CSS_SELECTOR, "button#run-cancel").get_attribute("disabled") is not None)
    return facts


def flow_xss(driver, cfg):
    """A transcript quoting markup: shown as characters, nothing of it runs."""
    sign_in(driver, cfg)
    open_session(driver, cfg["session"])
    # An image's error fires after its failed load: give it the time to.
    time.sleep(1)
    facts = driver.execute_script("""
      const t = document.querySelector('#transcript');
      return {pwned: typeof window.__pwned,
              img: t.querySelectorAll('img').length,
              script: t.querySelectorAll('script').length,
              allScripts: Array.from(document.scripts).map(s => s.getAttribute('src')),
              contents: Array.from(t.querySelectorAll('pre.content')).map(p => p.textContent)};
    """)
    facts["messages"] = messages(driver)
    scroll_to_tool(driver, "read_file")
    return facts


def flow_long(driver, cfg):
    """The first screen of a 10,000-message session, timed in the page."""
    sign_in(driver, cfg)
    elapsed = driver.execute_async_script("""
      const [id, done] = arguments;
      const start = performance.now();
      const shown = () => document.querySelector('li.message[data-seq="1"]') &&
        document.querySelector('[data-view=session][data-ready=true]');
      const observer = new MutationObserver(() => {
        if (shown()) { observer.disconnect(); done(performance.now() - start); }
      });
      observer.observe(document, {subtree: true, childList: true, attributes: true});
      location.hash = '#/sessions/' + id;
    """, cfg["session"])
    facts = {"ms": elapsed, "range": text_of(driver, "#transcript-range"),
             "shown": driver.execute_script(
                 "return Array.from(document.querySelectorAll('#transcript li.message')).map(li => Number(li.dataset.seq));"),
             "prevDisabled": driver.find_element(By.CSS_SELECTOR, "button#transcript-prev").get_attribute("disabled") is not None}
    driver.find_element(By.CSS_SELECTOR, "button#transcript-next").click()
    facts["nextRange"] = wait(driver, "the next page",
                              lambda d: (lambda r: r if r != facts["range"] else None)(
                                  text_of(d, "#transcript-range")))
    one(driver, 'li.message[data-seq="101"]')
    facts["nextShown"] = driver.execute_script(
        "return Array.from(document.querySelectorAll('#transcript li.message')).map(li => Number(li.dataset.seq));")
    # Back to the first screen for the screenshot.
    driver.find_element(By.CSS_SELECTOR, "button#transcript-prev").click()
    one(driver, 'li.message[data-seq="1"]')
    return facts


def flow_wrong_token(driver, cfg):
    """A token refused on an API call (here: replaced behind the console's back) signs out."""
    sign_in(driver, cfg)
    driver.execute_script("sessionStorage.setItem('sluice.token', arguments[0]);",
                          "wrong-" + cfg["token"])
    go(driver, "#/tools")
    one(driver, '#view [data-view="signin"]')
    error = wait(driver, "#signin-error", lambda d: text_of(d, "#signin-error"))
    return {"view": page(driver)["view"], "error": error}


FLOWS = {
    "signin": flow_signin,
    "live": flow_live,
    "paged": flow_paged,
    "shrunk": flow_shrunk,
    "approvals": flow_approvals,
    "cancel": flow_cancel,
    "xss": flow_xss,
    "long": flow_long,
    "wrong-token": flow_wrong_token,
}

if __name__ == "__main__":
    main()
