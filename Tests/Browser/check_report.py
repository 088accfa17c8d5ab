#!/usr/bin/python3
"""Open a `playout swarm --report` page in headless Chromium and check that it works there.

Run with Debian's Python (`/usr/bin/python3`), `python3-selenium`, `chromium` and `chromium-driver`
(`make setup` installs them). The page is opened from a file:// URL with every network path closed
(a dead proxy, no name resolution), and the script checks:

- the browser's console holds no entry of level SEVERE or WARNING;
- nothing but the file itself was requested (Chromium's performance log: Network.requestWillBeSent;
  and the page's own Resource Timing: no `resource` entry);
- there are `--charts` charts (`svg.chart`), each with a non-zero bounding box and drawn data (a
  `path.series` of non-zero length);
- the viewer table has `--rows` rows, and clicking a column's header sorts it: `--sort-column`
  ascending (numbers as numbers, `—` last), again descending; `state` as text; `viewer` back up;
  a long table's pager shows one page, moves to the next and shows all; the page is no wider than
  the window;
- a full-page PNG screenshot is written to `--screenshot`.

It prints one JSON object on standard output and exits 0 when every check held, 1 when one did not
(each failure named in `failures`), 2 when the browser could not be started.

    /usr/bin/python3 Tests/Browser/check_report.py run.html --screenshot run.png --charts 17 --rows 300
"""

import argparse
import base64
import json
import pathlib
import shutil
import sys
import tempfile

NULL = "\u2014"


def start_browser(profile):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for argument in [
        "--headless=new",
        "--no-sandbox",  # we run as root
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1440,900",
        "--hide-scrollbars",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-extensions",
        "--disable-sync",
        "--disable-default-apps",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-features=MediaRouter,OptimizationHints,Translate",
        # No network: whatever the page might try to fetch goes nowhere (and is seen below).
        "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=<-loopback>",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        "--user-data-dir=" + profile,
    ]:
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def column_values(driver, index):
    return driver.execute_script(
        "var i = arguments[0];"
        " return Array.prototype.map.call(document.getElementById('viewers').tBodies[0].rows,"
        " function (r) { return r.cells[i] ? r.cells[i].textContent : ''; });",
        index,
    )


def sorted_as(values, numeric, descending):
    """Whether `values` are in order: numbers as numbers (or text as text), `—` last either way."""
    keys = []
    for value in values:
        if value == NULL or value == "":
            keys.append(None)
        elif numeric:
            try:
                keys.append(float(value))
            except ValueError:
                return False
        else:
            keys.append(value)
    present = [key for key in keys if key is not None]
    first_null = next((i for i, key in enumerate(keys) if key is None), len(keys))
    if any(key is not None for key in keys[first_null:]):
        return False  # a value after an unknown
    expected = sorted(present, reverse=descending)
    if numeric:
        return present == expected
    # Text: the page compares UTF-16 code units, as JavaScript's < does.
    def utf16(text):
        return text.encode("utf-16-be")
    return [utf16(v) for v in present] == sorted((utf16(v) for v in present), reverse=descending)


def check(driver, url, args):
    from selenium.webdriver.common.by import By

    failures = []
    result = {"url": url}
    # Start from a blank page and forget what the browser itself loaded before (its new-tab page).
    driver.get("about:blank")
    driver.get_log("performance")
    driver.get_log("browser")
    driver.get(url)
    driver.execute_script("return document.readyState")

    # Drawn charts.
    charts = driver.execute_script(
        """
        return Array.prototype.map.call(document.querySelectorAll('svg.chart'), function (svg) {
            var box = svg.getBoundingClientRect();
            var lengths = Array.prototype.map.call(svg.querySelectorAll('path.series'), function (p) {
                return p.getTotalLength();
            });
            var caption = svg.closest('figure') && svg.closest('figure').querySelector('figcaption');
            return {title: caption ? caption.textContent : '', width: box.width, height: box.height,
                    series: lengths.length, drawn: lengths.filter(function (l) { return l > 0; }).length};
        });
        """
    )
    result["charts"] = charts
    if len(charts) != args.charts:
        failures.append("expected %d charts, found %d" % (args.charts, len(charts)))
    for chart in charts:
        if chart["width"] <= 0 or chart["height"] <= 0:
            failures.append("chart %r has an empty bounding box" % chart["title"])
        if chart["drawn"] == 0:
            failures.append("chart %r draws no data (%d series, none of non-zero length)" % (chart["title"], chart["series"]))

    # The table and its sorting.
    headers = driver.execute_script(
        "return Array.prototype.map.call(document.querySelectorAll('#viewers thead th'),"
        " function(th){return {text: th.textContent, numeric: th.getAttribute('data-type') === 'num'};});"
    )
    rows = driver.execute_script("return document.getElementById('viewers').tBodies[0].rows.length;")
    result["rows"] = rows
    if rows != args.rows:
        failures.append("expected %d viewer rows, found %d" % (args.rows, rows))
    names = [header["text"] for header in headers]
    sorting = []

    def click(name):
        index = names.index(name)
        header = driver.find_elements(By.CSS_SELECTOR, "#viewers thead th")[index]
        driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", header)
        before = column_values(driver, index)
        header.click()
        after = column_values(driver, index)
        state = header.get_attribute("aria-sort")
        return index, before, after, state

    plan = [(args.sort_column, "ascending"), (args.sort_column, "descending"), ("state", "ascending"), ("viewer", "ascending"), ("viewer", "descending")]
    for name, direction in plan:
        if name not in names:
            failures.append("no column %r in the viewer table (%s)" % (name, ", ".join(names)))
            continue
        index, before, after, state = click(name)
        numeric = headers[index]["numeric"]
        entry = {"column": name, "direction": state, "firstBefore": before[0] if before else None, "firstAfter": after[0] if after else None}
        sorting.append(entry)
        if state != direction:
            failures.append("clicking %r gave aria-sort %r, expected %r" % (name, state, direction))
        if sorted(before) != sorted(after):
            failures.append("sorting by %r changed the column's values" % name)
        if not sorted_as(after, numeric, direction == "descending"):
            failures.append("after clicking %r the column is not %s (%s, unknowns last)" % (name, direction, "numerically" if numeric else "as text"))
    result["sorting"] = sorting
    if len(sorting) >= 2 and sorting[0]["firstAfter"] == sorting[1]["firstAfter"]:
        failures.append("sorting %r both ways left the same first cell %r" % (args.sort_column, sorting[0]["firstAfter"]))

    # A long table shows a page at a time: the pager moves on and shows all.
    if driver.find_elements(By.ID, "pager"):
        def visible():
            return driver.execute_script(
                "var shown = Array.prototype.filter.call(document.getElementById('viewers').tBodies[0].rows, function (r) { return !r.hidden; });"
                " return [shown.length, shown.length ? shown[0].cells[0].textContent : null];"
            )

        def press(go):
            button = driver.find_element(By.CSS_SELECTOR, "#pager button[data-go='%s']" % go)
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
            button.click()

        first = visible()
        press("next")
        second = visible()
        press("all")
        every = visible()
        press("first")
        result["pages"] = {"first": first, "next": second, "all": every}
        if first[0] >= rows or first[0] == 0:
            failures.append("a %d-row table shows %d rows on its first page" % (rows, first[0]))
        if second[1] == first[1]:
            failures.append("the pager's next page starts with the same viewer %r" % first[1])
        if every[0] != rows:
            failures.append("'show all' shows %d of %d rows" % (every[0], rows))

    # How long one sort takes in the page, with the layout it causes (the handler is synchronous).
    if args.sort_column in names:
        result["sortMilliseconds"] = driver.execute_script(
            "var th = document.querySelectorAll('#viewers thead th')[arguments[0]];"
            " var t = performance.now(); th.click(); void document.body.offsetHeight; return performance.now() - t;",
            names.index(args.sort_column),
        )

    # Back to viewer order for the picture.
    if "viewer" in names:
        click("viewer")
        if driver.find_elements(By.CSS_SELECTOR, "#viewers thead th")[names.index("viewer")].get_attribute("aria-sort") != "ascending":
            click("viewer")

    # The page fits the window's width (long run text wraps or is cut, the table scrolls in its box).
    widths = driver.execute_script("return [document.documentElement.scrollWidth, document.documentElement.clientWidth];")
    result["pageWidth"] = widths
    if widths[0] > widths[1]:
        failures.append("the page scrolls sideways: %d px wide in a %d px window" % (widths[0], widths[1]))

    # Nothing fetched: Resource Timing, then Chromium's own network log.
    resources = driver.execute_script("return performance.getEntriesByType('resource').map(function(e){return e.name;});")
    result["resourceEntries"] = resources
    if resources:
        failures.append("the page fetched resources: %s" % ", ".join(resources[:5]))
    requests = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message.get("method") == "Network.requestWillBeSent":
            requested = message["params"]["request"]["url"]
            if requested.split("#")[0] != url and not requested.startswith("data:"):
                requests.append(requested)
    result["requests"] = requests
    if requests:
        failures.append("requests other than the file itself: %s" % ", ".join(requests[:5]))

    # Console: no error, no warning.
    console = [entry for entry in driver.get_log("browser") if entry.get("level") in ("SEVERE", "WARNING")]
    result["console"] = console
    for entry in console:
        failures.append("console %s: %s" % (entry["level"], entry.get("message", "")[:300]))

    # A full-page screenshot, from the top (the sticky navigation where it belongs).
    driver.execute_script("window.scrollTo(0, 0); document.querySelector('.scroll') && (document.querySelector('.scroll').scrollTop = 0);")
    metrics = driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
    size = metrics.get("cssContentSize") or metrics["contentSize"]
    width, height = int(size["width"]), int(size["height"])
    shot = driver.execute_cdp_cmd(
        "Page.captureScreenshot",
        {"format": "png", "captureBeyondViewport": True, "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}},
    )
    pathlib.Path(args.screenshot).write_bytes(base64.b64decode(shot["data"]))
    result["screenshot"] = {"path": args.screenshot, "width": width, "height": height}
    result["failures"] = failures
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", help="the report to open")
    parser.add_argument("--screenshot", required=True, help="where to write the full-page PNG")
    parser.add_argument("--charts", type=int, required=True, help="how many charts the page must draw")
    parser.add_argument("--rows", type=int, required=True, help="how many rows the viewer table must have")
    parser.add_argument("--sort-column", default="start-up (s)", help="the numeric column to sort both ways")
    args = parser.parse_args()

    url = pathlib.Path(args.html).resolve().as_uri()
    profile = tempfile.mkdtemp(prefix="check-report-")
    driver = None
    try:
        try:
            driver = start_browser(profile)
        except Exception as error:  # no chromium, no driver, no selenium
            print(json.dumps({"ok": False, "failures": ["the browser did not start: %s" % error]}))
            return 2
        result = check(driver, url, args)
    finally:
        if driver is not None:
            driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    result["ok"] = not result["failures"]
    print(json.dumps(result))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
