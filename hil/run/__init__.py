"""One run, start to end: the request, the pipeline that wires the steps, the image it runs, the run folder
it writes and the board session the plugin keeps. It stands on the domain packages; only front ends import it."""
