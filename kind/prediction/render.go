package prediction

import (
	"fmt"
	"strings"

	"github.com/dpstream/dpstream/internal/chart"
	"github.com/dpstream/dpstream/kind"
	"github.com/dpstream/dpstream/schema"
)

// A prediction release's record carries no data (the models are never
// published): its renderer says what was trained, from the record's public
// configuration fields.

// Draws reports true: every record of the kind is drawn by its text.
func (Kind) Draws(schema.Release) bool { return true }

// Render says what the window trained.
func (k Kind) Render(r schema.Release, _ chart.Options) []string {
	return []string{k.Line(r), "(models are not published: ask them with queries)"}
}

// Line names the learner, its features and classes.
func (Kind) Line(r schema.Release) string {
	s := fmt.Sprintf("models ready: %s on %s", orDash(r.Method), orDash(strings.Join(r.Fields, ", ")))
	if len(r.Categories) > 0 {
		s += " → " + strings.Join(r.Categories, " | ")
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

// SampleWidth is 0: the record carries no samples.
func (Kind) SampleWidth(schema.Release) int { return 0 }

// Adopts no shape: the records carry no data.
func (Kind) Adopts() kind.Shape { return kind.ShapeNone }
