// Prints one plain closing line, "N passed, N failed, N skipped", that tools reading
// CI logs understand whatever the runner; Jest's own summary stays above it.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const skipped = results.numPendingTests + results.numTodoTests;
    const failedSuites = results.numRuntimeErrorTestSuites; // suites that could not run count once each
    process.stdout.write(`\njest: ${results.numPassedTests} passed, ${results.numFailedTests + failedSuites} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
