package projection

// DisableOutcomeLookup turns off the look-up of fetched command IDs in the
// outcomes stream, for BenchmarkOutcomeLookup to measure what it costs.
func DisableOutcomeLookup(p *Projector) { p.noOutcomeLookup = true }
