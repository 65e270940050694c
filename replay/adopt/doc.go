// Package adopt journals a table that a service wrote directly through the
// Azure SDK as the first history of a journaled table (issue 37,
// docs/adopting.md): every row becomes an upsert command of its whole
// entity, published into the journal, and the projector writes the
// adopted table in the layout of SPEC §4.
//
// A pass ([Adopter.Plan]) reads the source table in parallel, one
// partition per worker and each partition by continuation tokens, checks
// every row against the rules of SPEC §2 (events.Limits.Validate, the
// writer's own check) and against the layout's reserved keys, and
// compares it with what the adopted table already holds. The result is a
// [Plan]: a dry run that says what would be journaled, and applies it with
// [Plan.Apply].
//
// Command IDs are a function of the source table, the adopted table, the
// row's keys and its ETag (SPEC §2, "Adoption"), so a second pass, or a
// pass resumed after a crash, journals nothing twice: a row the adopted
// table holds under the command its ETag names is unchanged. The adopted
// table is itself the pass state: its tip rows say, through _cmd, which
// version of each source row they hold, and the rows it holds that the
// source no longer has are deleted by a catch-up pass.
package adopt
