package projection_test

const crashChildEnv = "TABLEJOURNAL_CRASH_CHILD"

func crashChild() int { return 0 }
