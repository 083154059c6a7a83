package vcfsm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// browser is a headless Chromium (Debian's chromium package) driven over
// the DevTools protocol against one system's console. Every message the
// page writes to its console (calls, uncaught exceptions, the browser's
// own log: network failures, CSP violations) is recorded; checkConsole
// fails the test on any the test did not expect.
type browser struct {
	t     testing.TB
	ctx   context.Context
	base  string
	shots string

	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
	expected []string
}

// cspWitness reports every CSP violation on the console as an error, so
// one the browser would log only as a report is seen too. It runs in
// every document before the page's own scripts (a DevTools script: the
// page's CSP does not apply to it).
const cspWitness = `document.addEventListener('securitypolicyviolation', (e) =>
  console.error('CSP violation: ' + e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber));`

func newBrowser(t testing.TB, base string) *browser {
	t.Helper()
	path, err := exec.LookPath("chromium")
	require.NoError(t, err, "the console's tests drive Debian's chromium: `make chromium` installs it (apt-get install chromium)")
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.NoSandbox, // the tests may run as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 800),
		chromedp.UserDataDir(t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	b := &browser{t: t, ctx: ctx, base: base, shots: screenshotDir(t)}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.messages = append(b.messages, m)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		<-done
	})
	_, err = chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: cspWitness})
	require.NoError(t, err, "start chromium")
	return b
}

// screenshotDir is where the test's screenshots go: the test's artifact
// directory (go test -artifacts keeps it under -outputdir), or
// $VCFSM_SCREENSHOTS when set.
func screenshotDir(t testing.TB) string {
	if dir := os.Getenv("VCFSM_SCREENSHOTS"); dir != "" {
		require.NoError(t, os.MkdirAll(dir, 0o755))
		return dir
	}
	if a, ok := t.(interface{ ArtifactDir() string }); ok {
		return a.ArtifactDir()
	}
	return t.TempDir()
}

// run runs actions with a deadline.
func (b *browser) run(timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	require.NoError(b.t, chromedp.Do(ctx, actions...))
}

// open loads the console at a route (#/…) as a fresh page load.
func (b *browser) open(route string) {
	b.t.Helper()
	b.run(30*time.Second, chromedp.Navigate(b.base+"/ui/"+route))
}

// route changes the console's route in the page, as a link would.
func (b *browser) route(route string) {
	b.t.Helper()
	b.eval(fmt.Sprintf("location.hash = %q", route))
}

// waitFor waits until the JavaScript predicate is true.
func (b *browser) waitFor(what string, timeout time.Duration, predicate string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout+5*time.Second)
	defer cancel()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](predicate, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(timeout)))
	if err != nil {
		b.t.Fatalf("waiting for %s (%s): %v\nnotice: %s\nmain: %s\nconsole:\n%s", what, predicate, err, b.text("#notice"), b.text("main"), b.consoleText())
	}
}

// waitSelector waits until an element matching the CSS selector exists.
func (b *browser) waitSelector(sel string, timeout time.Duration) {
	b.t.Helper()
	b.waitFor(sel, timeout, fmt.Sprintf("!!document.querySelector(%q)", sel))
}

func (b *browser) click(sel string) {
	b.t.Helper()
	b.waitSelector(sel, 30*time.Second)
	b.run(30*time.Second, chromedp.Click(chromedp.CSS(sel)))
}

// typeInto focuses a field and types text into it with key events.
func (b *browser) typeInto(sel, text string) {
	b.t.Helper()
	b.waitSelector(sel, 30*time.Second)
	b.eval(fmt.Sprintf("document.querySelector(%q).value = ''", sel))
	b.run(30*time.Second, chromedp.SendKeys(chromedp.CSS(sel), text))
}

// text is an element's rendered text ("" when there is none).
func (b *browser) text(sel string) string {
	b.t.Helper()
	var out string
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	out, _ = chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("(document.querySelector(%q) || {innerText: ''}).innerText", sel)))
	return out
}

func (b *browser) eval(expr string) {
	b.t.Helper()
	b.run(10*time.Second, chromedp.Evaluate[chromedp.Void](expr))
}

func evalAs[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(b.t, err, expr)
	return v
}

// screenshot saves the viewport as <name>.png in the screenshot directory.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(b.t, err)
	path := filepath.Join(b.shots, name+".png")
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot %s", path)
}

// signIn signs in with a token, with the keyboard only: type it, press
// Enter.
func (b *browser) signIn(token, principal, role string) {
	b.t.Helper()
	b.open("#/signin")
	b.typeInto("#token", token+"\r")
	b.waitFor("the signed-in identity", 30*time.Second, fmt.Sprintf("(document.querySelector('#identity')||{}).textContent === %q", principal+" ("+role+")"))
}

// consoleText is everything the console recorded so far, for failures.
func (b *browser) consoleText() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, m := range b.messages {
		out = append(out, fmt.Sprintf("  %s (%s) %s at %s:%d", m.Type, m.Source, m.Text, m.URL, m.Line))
	}
	return strings.Join(out, "\n")
}

// expectConsole declares a console message the test causes on purpose
// (text it contains); checkConsole accepts each declared one once.
func (b *browser) expectConsole(contains string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expected = append(b.expected, contains)
}

// checkConsole fails on any error, warning, exception or CSP violation on
// the console that the test did not declare, and on declared ones that
// did not happen.
func (b *browser) checkConsole() {
	b.t.Helper()
	// Messages arrive asynchronously; a round trip to the page lets the
	// ones already written reach the recorder.
	b.eval("void 0")
	b.mu.Lock()
	defer b.mu.Unlock()
	expected := append([]string(nil), b.expected...)
	var unexpected []string
	for _, m := range b.messages {
		if m.Type != chromedp.ConsoleType("error") && m.Type != chromedp.ConsoleType("warning") && !m.IsException() &&
			!strings.Contains(m.Text, "CSP") && !strings.Contains(m.Text, "Content Security Policy") {
			continue
		}
		matched := false
		for i, e := range expected {
			if strings.Contains(m.Text+" "+m.URL, e) {
				expected = append(expected[:i], expected[i+1:]...)
				matched = true
				break
			}
		}
		if !matched {
			unexpected = append(unexpected, fmt.Sprintf("%s (%s) %s at %s", m.Type, m.Source, m.Text, m.URL))
		}
	}
	require.Empty(b.t, unexpected, "the browser's console has errors")
	require.Empty(b.t, expected, "console messages the test caused did not appear")
}
