// Package prediction is private prediction by subsample and aggregate
// (Dwork & Feldman 2018, "Privacy-preserving Prediction", COLT,
// arXiv:1803.10266, section 3's baseline; SPEC section 5): the training
// units are split into r disjoint shards by a keyed hash of the unit
// (Sharder), a non-private model is fit on each shard (FitRidge for a real
// target, FitLogistic for a class), the models are never published, and
// each query is answered privately from the r models' predictions:
//
//   - Classify: the soft majority of the r votes, label b with probability
//     ∝ exp(ε·votes_b/2) (the exponential mechanism), sampled exactly;
//   - Regressor: the average of the r predictions clamped to [lo, hi], on
//     a fixed-point grid, plus exact discrete Laplace or Gaussian noise
//     calibrated to (hi − lo)/r;
//   - Evaluator: private evaluation of a batch of labelled queries, the
//     mean loss of the r models over the batch with noise calibrated to
//     (loss bound)/r, whatever the batch size.
//
// # Guarantee and neighbouring relation
//
// Every answer is differentially private with respect to the training data
// under add/remove of one privacy unit (all of its rows). The query (its
// features, and the labels of an evaluation batch) is public: it is the
// querier's own input. The shard of a unit depends on the unit and the key
// only, never on the other units or on the data, so adding or removing a
// unit changes the rows of exactly one shard; the learners are
// deterministic functions of their shard's rows, so exactly one of the r
// models can change, and with it one model's prediction (one vote) per
// query. Each mechanism's sensitivity follows from that; r is a fixed,
// public number (an empty shard still has a model, see FitRidge and
// FitLogistic), never the number of non-empty shards.
//
// Each answered query is a separate mechanism: k answers compose (the
// accountant charges each with its Charge). The key of the Sharder is a
// secret configuration value; the guarantee does not rest on its secrecy
// (any partition that depends on the unit alone gives it) but a secret key
// stops an adversary from choosing which units land in one shard.
//
// # Exactness
//
// Nothing random is drawn in floating point: the soft majority accepts a
// label by an exact coin built from the discrete Laplace sampler, and the
// regression and evaluation sums are exact integers on a fixed-point grid
// to which exact discrete noise is added (mechanism/noise); every released
// real number is a post-processing of the noisy integer.
//
// This package does no Kafka, configuration or stage work: the query path
// and the accountant's per-stream budget are the caller's.
package prediction
