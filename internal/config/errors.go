package config

import (
	"errors"
	"slices"
	"strconv"
	"strings"
)

// Error is a configuration error at a place in the file.
type Error struct {
	Path  string // file name as given to Load or Parse; may be ""
	Line  int    // 1-based line, 0 when the error is about the whole file
	Field string // dotted path of the field, e.g. streams[0].releases[1].epsilon; "" for the file
	Msg   string // what is wrong and, where it helps, how to fix it
	err   error  // underlying cause, if any (for errors.Is)
}

// Error formats the error as "path:line: field: msg", e.g.
// "pipeline.yaml:14: streams[0].releases[1].epsilon: must be > 0, got -1".
// Parts that are unknown are left out; without a path the line is written
// "line 14".
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.Path != "" && e.Line > 0:
		b.WriteString(e.Path + ":" + strconv.Itoa(e.Line) + ": ")
	case e.Path != "":
		b.WriteString(e.Path + ": ")
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Unwrap returns the underlying cause, such as the fs.PathError of a file
// that could not be read, so that errors.Is(err, fs.ErrNotExist) works.
func (e *Error) Unwrap() error { return e.err }

// Errors returns every *Error contained in err, in order, looking through
// errors.Join and wrapping. It returns nil for a nil error.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		switch x := err.(type) {
		case nil:
		case *Error:
			out = append(out, x)
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walk(e)
			}
		default:
			walk(errors.Unwrap(err))
		}
	}
	walk(err)
	return out
}

// joinSorted sorts errs by line (stable, so errors on one line keep the order
// they were found in) and joins them. A single error is returned as is, so
// that callers who expect one can type-assert it.
func joinSorted(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int { return a.Line - b.Line })
	if len(errs) == 1 {
		return errs[0]
	}
	all := make([]error, len(errs))
	for i, e := range errs {
		all[i] = e
	}
	return errors.Join(all...)
}

// suggest returns the candidate closest to got, ignoring case, when it is
// close enough to be a plausible typo: at most 2 edits, and fewer edits than
// half of got's length, so that short unrelated words are not suggested.
func suggest(got string, candidates []string) (string, bool) {
	g := strings.ToLower(got)
	best, bestDist := "", -1
	for _, c := range candidates {
		d := editDistance(g, strings.ToLower(c))
		if bestDist < 0 || d < bestDist {
			best, bestDist = c, d
		}
	}
	if bestDist < 0 || bestDist > 2 || 2*bestDist > len([]rune(g)) {
		return "", false
	}
	return best, true
}

// didYouMean returns ` (did you mean "x"?)` or "".
func didYouMean(got string, candidates []string) string {
	if s, ok := suggest(got, candidates); ok {
		return " (did you mean " + strconv.Quote(s) + "?)"
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Two rows of the dynamic programme: prev is row i-1, cur is row i.
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			sub := prev[j-1]
			if ra[i-1] != rb[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
