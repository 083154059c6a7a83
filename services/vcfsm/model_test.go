package vcfsm_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

var modelObserve = flag.Bool("model-observe", false, "TestModelCells prints what each cell does today instead of checking the table")

// cellResult is what driving one cell observed.
type cellResult struct {
	reachErr, actErr error
	answer           reply
	end              view
	targets          string
	listed           string
	settleErr        error
}

// TestModelCells drives every cell of docs/lifecycle-semantics.md through
// the all-in-one (simulator driver): each cell gets a fresh service, brought
// to its row for real, then the column's action; the answer, the state the
// service settles in and what it owns on the targets are checked against
// the table. The cells run concurrently (their services are independent);
// each is then reported as its own subtest.
func TestModelCells(t *testing.T) {
	if testing.Short() {
		t.Skip("drives every cell of the semantics table; run without -short")
	}
	w := newWorld(t, fastRollouts)
	results := map[string]*cellResult{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for _, r := range modelRows {
		for _, c := range modelColumns {
			if !selectedCell(r.Key, c.Key) {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				res := driveCell(t, w, r, c.Key, modelTable[cellKey(r.Key, c.Key)])
				mu.Lock()
				results[cellKey(r.Key, c.Key)] = res
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	for _, r := range modelRows {
		for _, c := range modelColumns {
			res, ok := results[cellKey(r.Key, c.Key)]
			if !ok {
				continue
			}
			t.Run(r.Key+"/"+c.Key, func(t *testing.T) {
				if *modelObserve {
					t.Logf("observed %q: %s", cellKey(r.Key, c.Key), res.literal())
					return
				}
				checkCell(t, r, modelTable[cellKey(r.Key, c.Key)], res)
			})
		}
	}
}

// selectedCell honours MODEL_CELLS (a comma-separated list of row or
// row×column keys) to drive a few cells while working on them.
func selectedCell(row, col string) bool {
	sel := os.Getenv("MODEL_CELLS")
	if sel == "" {
		return true
	}
	for _, s := range strings.Split(sel, ",") {
		if s == row || s == cellKey(row, col) || s == "*×"+col {
			return true
		}
	}
	return false
}

func driveCell(t testing.TB, w *world, r modelRow, col string, want outcome) *cellResult {
	res := &cellResult{}
	m := &modelRun{w: w, s: newModelService(t, w, needsV2(r.Key, col)), row: r, open: make(chan struct{})}
	defer func() {
		select {
		case <-m.open:
		default:
			close(m.open)
		}
	}()
	if res.reachErr = m.reach(); res.reachErr != nil {
		return res
	}
	res.answer, res.actErr = m.act(col)
	if col == "supervisor-upgrade" {
		res.listed = listedIn(res.answer, m.s.id)
	}
	if r.Key == "registering" {
		close(m.open)
	}
	res.settleErr = settleCell(m, want, res)
	return res
}

// needsV2: the cells that upgrade, or whose row did.
func needsV2(row, col string) bool {
	return slices.Contains([]string{"upgrading", "upgrade-failed"}, row) ||
		slices.Contains([]string{"source", "auto-upgrade", "auto-rollback", "rollout"}, col)
}

// settleCell waits until the service matches want and holds it for a second;
// in observe mode, until it stops changing.
func settleCell(m *modelRun, want outcome, res *cellResult) error {
	look := func() (bool, error) {
		v, err := m.view()
		if err != nil {
			return false, err
		}
		tg, err := targets(m.w.sim, m.s.id)
		if err != nil {
			return false, err
		}
		changed := v.End() != res.end.End() || v.Version != res.end.Version || tg != res.targets
		res.end, res.targets = v, tg
		if *modelObserve {
			return !changed, nil
		}
		return matches(want, v, tg), nil
	}
	if *modelObserve {
		// Judge it still when two looks 2 s apart agree.
		return until(30*time.Second, func() (bool, error) {
			<-time.After(2 * time.Second)
			return look()
		})
	}
	// It must settle there: match, then hold for a second. A passing
	// flicker (Busy while the controllers re-read the targets after an
	// operation) is waited out; a wrong operation started in the
	// background moves it away for good and fails.
	overall := time.Now().Add(60 * time.Second)
	for {
		if err := until(time.Until(overall), look); err != nil {
			return err
		}
		held, err := holds(look)
		if held {
			return nil
		}
		if time.Now().After(overall) {
			return fmt.Errorf("matched, then moved to %s %s (%s): %w", res.end.End(), res.end.Version, res.targets, err)
		}
	}
}

// holds reports whether look keeps matching for a second.
func holds(look func() (bool, error)) (bool, error) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if ok, err := look(); !ok || err != nil {
			return false, err
		}
		<-time.After(50 * time.Millisecond)
	}
	return true, nil
}

func wantVersion(o outcome) string {
	switch o.Version {
	case "":
		return "1.0.0"
	case "none":
		return ""
	}
	return o.Version
}

func matches(o outcome, v view, tg string) bool {
	if o.End == "gone" {
		return v.Gone && tg == o.Targets
	}
	return v.End() == o.End && v.Version == wantVersion(o) && tg == o.Targets
}

// listedIn says how the Supervisor upgrade check lists the service.
func listedIn(r reply, id string) string {
	var body struct {
		Services []struct {
			ID      string `json:"id"`
			Blocked bool   `json:"blocked"`
		} `json:"services"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return "unreadable answer"
	}
	for _, s := range body.Services {
		if s.ID == id && s.Blocked {
			return "blocked"
		} else if s.ID == id {
			return "listed"
		}
	}
	return "not listed"
}

func checkCell(t *testing.T, r modelRow, want outcome, res *cellResult) {
	require.NotEmpty(t, want.End, "the table has no cell for this")
	require.NoError(t, res.reachErr, "reaching %s/%s (%s)", r.State, r.Status, r.Via)
	require.NoError(t, res.actErr)
	require.Equal(t, want.Code, res.answer.Status, "the answer: %s", res.answer)
	switch {
	case res.listed != "":
		require.Equal(t, want.Msg, res.listed, "the Supervisor upgrade check: %s", res.answer)
	case want.Msg != "":
		require.Contains(t, string(res.answer.Body), want.Msg, "the refusal says why")
	}
	require.NoError(t, res.settleErr, "settling: want %s %s with %s on the targets; it is %s %s (phase %q, operation %s/%s %q) with %s",
		want.End, wantVersion(want), want.Targets, res.end.End(), res.end.Version, res.end.Phase, res.end.Step, res.end.Outcome, res.end.OpMessage, res.targets)
}

// literal is the observed cell as a table entry, for -model-observe.
func (res *cellResult) literal() string {
	if res.reachErr != nil {
		return "reach: " + res.reachErr.Error()
	}
	msg := ""
	if res.listed != "" {
		msg = res.listed
	} else if res.answer.Status >= 400 {
		msg = string(res.answer.Body)
	}
	end := res.end.End()
	return fmt.Sprintf("code %d end %s version %q targets %s msg %s (settle err %v, act err %v)", res.answer.Status, end, res.end.Version, res.targets, msg, res.settleErr, res.actErr)
}

// TestSemanticsDoc: docs/lifecycle-semantics.md carries the tables
// rendered from modelTable (`make docs` rewrites them).
func TestSemanticsDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "lifecycle-semantics.md")
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	const begin, end = "<!-- BEGIN semantics tables: generated from services/vcfsm/model_cells_test.go -->\n", "<!-- END semantics tables -->"
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	require.True(t, i >= 0 && j > i, "%s has the generated-tables markers", path)
	want := doc[:i+len(begin)] + "\n" + docTable() + doc[j:]
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, []byte(want), 0o600))
		return
	}
	require.Equal(t, want, doc, "%s is out of date with the model's table: run make docs", path)
	for _, r := range modelRows {
		for _, c := range modelColumns {
			_, ok := modelTable[cellKey(r.Key, c.Key)]
			require.True(t, ok, "the table has a cell for %s × %s", r.Key, c.Key)
		}
	}
	keys := make([]string, 0, len(modelTable))
	for k := range modelTable {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.Len(t, keys, len(modelRows)*len(modelColumns), "no cell outside the rows and columns: %v", keys)
}
