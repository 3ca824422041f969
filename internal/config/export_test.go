package config

// Internals for the external tests (package config_test), which parse
// configurations with the real release kinds and so cannot be in package
// config: the kinds import it.

var (
	RootKeys         = rootKeys
	EmbeddedKeys     = embeddedKeys
	TopicsKeys       = topicsKeys
	MetricsKeys      = metricsKeys
	StreamKeys       = streamKeys
	WindowKeys       = windowKeys
	ContributionKeys = contributionKeys
	BudgetKeys       = budgetKeys
	ReleaseKeys      = releaseKeys
	Suggest          = suggest
	EditDistance     = editDistance
	IsFinite         = finite
	TLSKeys          = tlsKeys
	SASLKeys         = saslKeys
)
