package erasure

// SecureDelete lets the tests remove part of what an erase removes, as a
// crash in the middle of one would leave it.
var SecureDelete = secureDelete

// AwaitFollowers lets the tests check the wait for a record's followers.
var AwaitFollowers = awaitFollowers

// SubjectMatches lets the tests check the subject filter match.
var SubjectMatches = subjectMatches
