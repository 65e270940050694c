package repair

// Publish publishes a plan's commands as its Apply does once the plan is
// fresh, for tests that build a plan by hand.
var Publish = (*Planner).publish
