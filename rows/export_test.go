package rows

// LoadRanges is loadRanges, for the tests of package rows_test, which
// write their rows through the projector's applier.
var LoadRanges = loadRanges
