"""A headless Chromium driven by Selenium and Debian's chromedriver, for tests."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

#: Where browser tests leave their screenshots (not committed).
ARTIFACTS = Path(os.environ.get("NGINX_SIZING_ARTIFACTS", Path.cwd() / "test-artifacts"))


def chromium_paths() -> tuple[str, str]:
    """Paths of chromium and chromedriver; the test fails (not skips) when one is missing."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or (
        "/usr/bin/chromedriver" if shutil.which("/usr/bin/chromedriver") else None
    )
    if chromium is None or driver is None:
        pytest.fail("chromium and chromium-driver are needed (make test installs them)")
    return chromium, driver


@contextlib.contextmanager
def chrome(width: int = 1280, height: int = 900) -> Iterator[Any]:
    """A headless Chromium whose viewport is ``width`` x ``height`` CSS pixels."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = chromium_paths()
    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
    ):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(driver_path), options=opts)
    try:
        driver.set_page_load_timeout(180)
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        yield driver
    finally:
        driver.quit()


def wait_for(check: Callable[[], Any], timeout_s: float, what: str, poll_s: float = 0.5) -> Any:
    """Poll ``check`` until it returns something true; fail naming ``what`` after the timeout."""
    deadline = time.monotonic() + timeout_s
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except Exception as exc:  # the page may be mid-update: poll again
            last_error = exc
        time.sleep(poll_s)
    pytest.fail(f"timed out after {timeout_s:g} s waiting for {what} (last error: {last_error})")
