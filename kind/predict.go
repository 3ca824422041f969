package kind

import (
	"errors"

	"github.com/dpstream/dpstream/internal/config"
	"github.com/dpstream/dpstream/mechanism/noise"
)

// This file is the seam of the releases that answer queries (kind
// prediction): a window's release trains models that are never published,
// and each query the stage reads from the requests topic is answered from
// them privately, charged to the stream's accountant like a release and
// made durable ledger-first like one.

// Query operations (Query.Op).
const (
	// OpPredict asks for one prediction: a label or a value for one row of
	// features.
	OpPredict = "predict"
	// OpEvaluate asks for the models' mean loss over a batch of labelled
	// rows (private evaluation).
	OpEvaluate = "evaluate"
)

// Query is one request's input, as the querier sent it. It is public: the
// querier's own data, never the stream's.
type Query struct {
	// Op is OpPredict or OpEvaluate.
	Op string
	// Rows are the feature vectors: one for OpPredict, the batch for
	// OpEvaluate.
	Rows [][]float64
	// Labels are the batch's labels for OpEvaluate, one per row: a class
	// name for a classifier, a number in decimal for a regression. Empty
	// for OpPredict.
	Labels []string
}

// Answer is a query's private answer: the fields of the response.
type Answer struct {
	// Label is a classifier's predicted class; "" otherwise.
	Label string
	// Value is a regression's predicted value, or an evaluation's mean
	// loss; 0 for a classifier's prediction.
	Value float64
	// Interval95 is the half-width of the 95% interval of the noise added
	// to Value (0 for a label, which carries no additive noise).
	Interval95 float64
}

// ErrQuery is wrapped by the errors of Predictor.Check (answered as
// QueryInvalid by the State's Answerer): the query itself
// is malformed (wrong number of features, a label the model does not
// know, a batch of the wrong size). Such a query is answered with its
// reason and charged nothing.
var ErrQuery = errors.New("invalid query")

// Predictor is a Plan whose windows train models that answer queries. The
// window's own release publishes nothing about the data (its Charges are
// empty: training costs nothing, each answer is charged); its merged
// statistics become the window's model state, kept in the window's ledger
// charge (never published: it is exact data, protected like the partials
// topic) so that a restart answers from the same models. The release
// stage never names it: package kind/prediction's State (prediction.NewState,
// a kind.State and kind.Answerer) builds on a Predictor, and explain
// reads its QueryCharges.
type Predictor interface {
	Plan
	// ModelState returns the private state of the window's models from
	// its merged statistics (Merge's result): exact integers from which
	// Model rebuilds the same models, deterministically.
	ModelState(m Merged) ([]int64, error)
	// Model rebuilds the window's models from a state ModelState returned
	// (possibly by an earlier process, read back from the ledger).
	Model(state []int64) (Model, error)
	// Check validates a query against the configuration alone (no data):
	// an error wrapping ErrQuery names what is wrong.
	Check(q Query) error
	// QueryCharges are what one answer of op costs, fixed by the
	// configuration: the accountant composes them, in order, as it does a
	// release's Charges.
	QueryCharges(op string) []Charge
	// QueryLimit is the most answers the release gives from one window's
	// models (0: no limit but the stream's budget).
	QueryLimit() int
}

// Model is one window's trained models. It answers a query that
// Predictor.Check accepted, drawing its noise from sampler; the answer
// is the mechanism's output, private with respect to the window's data
// under add/remove of one privacy unit at the cost QueryCharges states.
type Model interface {
	Answer(q Query, sampler noise.Sampler) (Answer, error)
}

// QueryConfig is implemented by the decoded configuration
// (config.Release.Params) of a kind whose plans are Predictors, so that
// what needs to know before planning (the topics to create) can tell.
type QueryConfig interface {
	AnswersQueries() bool
}

// AnswersQueries reports whether a configured release answers queries.
func AnswersQueries(r config.Release) bool {
	q, ok := r.Params.(QueryConfig)
	return ok && q.AnswersQueries()
}

// ConfigAnswersQueries reports whether any release of c answers queries:
// then the requests and responses topics are needed.
func ConfigAnswersQueries(c *config.Config) bool {
	for _, s := range c.Streams {
		for _, r := range s.Releases {
			if AnswersQueries(r) {
				return true
			}
		}
	}
	return false
}
