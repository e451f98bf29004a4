// Package browsertest opens a page in headless Chromium for tests and
// records what a user's browser would do with it: console messages and
// uncaught exceptions, Content-Security-Policy violations, every network
// request, and every dialog (alert, confirm, prompt) a script tried to
// open. Tests query the page's DOM by evaluating JavaScript after waiting
// for the state they need, never after a fixed delay.
//
// Chromium is the Debian package chromium (/usr/bin/chromium), or the
// binary named by $LOSSAUDIT_TESTBED_CHROMIUM; when neither is there, Open skips
// the test with a message saying how to install it.
package browsertest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/lossaudit/lossaudit/testbed/poll"
)

// InstallHint says how to get Chromium for the browser tests.
const InstallHint = "apt-get update && apt-get install -y chromium"

// Timeout bounds each wait and the whole life of one browser.
const Timeout = 60 * time.Second

// Path returns the Chromium binary to use, "" when there is none.
func Path() string {
	if p := os.Getenv("LOSSAUDIT_TESTBED_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if _, err := os.Stat("/usr/bin/chromium"); err == nil {
		return "/usr/bin/chromium"
	}
	return ""
}

// Require skips t when Chromium is not installed, saying how to install
// it; a test calls it before expensive setup that only the browser needs.
func Require(t testing.TB) {
	t.Helper()
	if Path() == "" {
		t.Skipf("headless Chromium is not installed, skipping the browser test (install it with: %s)", InstallHint)
	}
}

// Options tune Open.
type Options struct {
	// Width and Height of the viewport (default 1280 x 900).
	Width, Height int64
	// Dark emulates prefers-color-scheme: dark (default light).
	Dark bool
	// NoScript disables JavaScript, as some mail clients and viewers do.
	NoScript bool
}

// recorder runs in the page before any of its own scripts (DevTools
// injects it, so the page's CSP does not apply to it): it notes CSP
// violations and turns the dialog functions into counters, so that a
// script injected through the data cannot block the page and is seen.
const recorder = `(function () {
  window.__csp = [];
  window.__dialogs = [];
  document.addEventListener("securitypolicyviolation", function (e) {
    window.__csp.push(e.violatedDirective + " " + e.blockedURI);
  });
  ["alert", "confirm", "prompt"].forEach(function (name) {
    window[name] = function (msg) { window.__dialogs.push(name + "(" + String(msg) + ")"); };
  });
})();`

// Page is a page open in headless Chromium.
type Page struct {
	t   testing.TB
	ctx context.Context
	URL string

	mu       sync.Mutex
	console  []string
	requests []string
	dialogs  []string
}

// Open starts a headless Chromium with a new empty profile, loads the file
// at path and waits until the document is complete (and, with scripts
// enabled, the page's own script is done when it marks
// <html data-script="ready">). It skips t when Chromium is not installed.
// The browser is closed when t ends.
func Open(t testing.TB, path string, opt Options) *Page {
	t.Helper()
	Require(t)
	bin := Path()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Width == 0 {
		opt.Width, opt.Height = 1280, 900
	}
	p := &Page{t: t, URL: (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()}

	ctx, cancel := context.WithTimeout(context.Background(), 3*Timeout)
	t.Cleanup(cancel)
	allocOpts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("no-pings", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(int(opt.Width), int(opt.Height)),
	}
	actx, acancel := chromedp.NewExecAllocator(ctx, allocOpts...)
	t.Cleanup(acancel)
	tctx, tcancel := chromedp.NewContext(actx, chromedp.WithListener(p.listen))
	t.Cleanup(tcancel)
	p.ctx = tctx

	// The first command starts the browser; then the domains whose events
	// are recorded, the emulation, and the recorder.
	if _, err := chromedp.Call(tctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("starting Chromium (%s): %v", bin, err)
	}
	scheme := "light"
	if opt.Dark {
		scheme = "dark"
	}
	steps := []func() error{
		func() error { _, err := chromedp.Call(tctx, log.Enable, struct{}{}); return err },
		func() error {
			_, err := chromedp.Call(tctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: recorder})
			return err
		},
		func() error {
			_, err := chromedp.Call(tctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
				Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})
			return err
		},
		func() error { return chromedp.Do(tctx, chromedp.EmulateViewport(opt.Width, opt.Height)) },
	}
	if opt.NoScript {
		steps = append(steps, func() error {
			_, err := chromedp.Call(tctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true})
			return err
		})
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("preparing Chromium: %v", err)
		}
	}
	if err := chromedp.Do(tctx, chromedp.Navigate(p.URL)); err != nil {
		t.Fatalf("opening %s: %v", p.URL, err)
	}
	ready := `document.readyState === "complete"`
	if !opt.NoScript {
		ready += ` && document.documentElement.getAttribute("data-script") === "ready"`
	}
	p.WaitFor(ready)
	return p
}

// listen records the page's events; it runs in the tab's event loop and
// must return fast.
func (p *Page) listen(ev any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		var args []string
		for _, a := range ev.Args {
			if len(a.Value) > 0 {
				args = append(args, string(a.Value))
			} else {
				args = append(args, a.Description)
			}
		}
		p.console = append(p.console, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil {
			text += " " + d.Exception.Description
		}
		p.console = append(p.console, "exception: "+text)
	case *log.EventEntryAdded:
		p.console = append(p.console, fmt.Sprintf("log %s (%s): %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text))
	case *network.EventRequestWillBeSent:
		if ev.Request.URL != p.URL {
			p.requests = append(p.requests, ev.Request.URL)
		}
	case *page.EventJavascriptDialogOpening:
		p.dialogs = append(p.dialogs, fmt.Sprintf("%s(%s)", ev.Type, ev.Message))
		go func() { // a dialog blocks the page until it is closed
			_, _ = chromedp.Call(p.ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{})
		}()
	}
}

// Eval evaluates a JavaScript expression in the page and decodes its
// value into T (JSON-compatible types), failing the test on error.
func Eval[T any](p *Page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// WaitFor polls the JavaScript condition cond until it is true, failing
// the test after Timeout.
func (p *Page) WaitFor(cond string) {
	p.t.Helper()
	var err error
	if perr := poll.Until(p.ctx, Timeout, 50*time.Millisecond, cond+" in "+p.URL, func() bool {
		ctx, cancel := context.WithTimeout(p.ctx, Timeout)
		defer cancel()
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool]("Boolean("+cond+")"))
		return err == nil && ok
	}); perr != nil {
		p.t.Fatalf("waiting for %v (last error: %v)", perr, err)
	}
}

// Click clicks the first element matching the CSS selector sel.
func (p *Page) Click(sel string) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		p.t.Fatalf("clicking %s: %v", sel, err)
	}
}

// Console returns the console messages, uncaught exceptions and browser
// log entries so far, together with the CSP violations the recorder saw.
func (p *Page) Console() []string {
	p.t.Helper()
	csp := Eval[[]string](p, "window.__csp || []")
	p.mu.Lock()
	defer p.mu.Unlock()
	out := append([]string(nil), p.console...)
	for _, v := range csp {
		out = append(out, "CSP violation: "+v)
	}
	return out
}

// CheckQuiet fails the test for anything a report page must never do:
// log a message or a CSP violation, make a request, or open a dialog.
func (p *Page) CheckQuiet() {
	p.t.Helper()
	if c := p.Console(); len(c) > 0 {
		p.t.Errorf("console messages: %q", c)
	}
	if r := p.Requests(); len(r) > 0 {
		p.t.Errorf("network requests: %q", r)
	}
	if d := p.Dialogs(); len(d) > 0 {
		p.t.Errorf("dialogs opened: %q", d)
	}
}

// Requests returns the URLs of every request the page made besides
// loading itself.
func (p *Page) Requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// Dialogs returns the dialogs scripts opened or tried to open.
func (p *Page) Dialogs() []string {
	p.t.Helper()
	tried := Eval[[]string](p, "window.__dialogs || []")
	p.mu.Lock()
	defer p.mu.Unlock()
	return append(append([]string(nil), p.dialogs...), tried...)
}

// Screenshot writes a PNG to path: of the whole page, or with viewport
// set, of the part the viewport shows (Options.Width x Options.Height).
func (p *Page) Screenshot(path string, viewport bool) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Timeout)
	defer cancel()
	shot := chromedp.FullScreenshot(100)
	if viewport {
		shot = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		p.t.Fatalf("taking a screenshot of %s: %v", p.URL, err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
}
