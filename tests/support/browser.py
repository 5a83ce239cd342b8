"""A real headless browser for the dashboard tests: Debian's chromium driven through its
chromedriver by selenium (scripts/setup.sh installs both; without them the tests skip, saying so).

    reason = browser_missing()          # None when chromium, its driver and selenium are here
    with headless_chromium(tmp) as driver:
        driver.get(url)

Chromium is started with no background networking, no sync, no first-run work and a fresh
profile: on a machine without network it would otherwise keep trying to reach its services.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["CHROMEDRIVER", "CHROMIUM", "browser_missing", "headless_chromium", "screenshot"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# Where the tests leave a picture of each page (docs/dashboard when refreshing the docs); unset: none.
SCREENSHOTS_VARIABLE = "TOOLSCOUT_SCREENSHOTS"
_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1280,860",
)


def browser_missing() -> str | None:
    """Why the browser tests cannot run here, or None."""
    for path in (CHROMIUM, CHROMEDRIVER):
        if not path.exists() and shutil.which(path.name) is None:
            return f"{path} is not installed (Debian packages chromium and chromium-driver; scripts/setup.sh installs them as root)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return None


@contextmanager
def headless_chromium(profile: Path) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM if CHROMIUM.exists() else shutil.which("chromium"))
    for flag in _FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    driver = webdriver.Chrome(
        service=Service(str(CHROMEDRIVER if CHROMEDRIVER.exists() else shutil.which("chromedriver"))),
        options=options,
    )
    try:
        driver.set_page_load_timeout(60)
        yield driver
    finally:
        driver.quit()


def screenshot(driver: Any, name: str) -> None:
    """A picture of the page shown, as `<name>.png` in $TOOLSCOUT_SCREENSHOTS (if set)."""
    folder = os.environ.get(SCREENSHOTS_VARIABLE)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        height = driver.execute_script("return document.documentElement.scrollHeight")
        driver.set_window_size(1280, max(600, min(int(height) + 20, 2000)))
        driver.save_screenshot(str(Path(folder) / f"{name}.png"))
        driver.set_window_size(1280, 860)
