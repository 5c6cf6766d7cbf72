// Prints every skipped test with its reason (test/helpers/skip.ts puts the reason in the name),
// then one plain closing line, "N passed, N failed, N skipped", that tools reading CI logs
// understand whatever the runner; Jest's own summary stays above it.
const path = require('node:path');

class SummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const skippedLines = [];
    for (const file of results.testResults) {
      for (const t of file.testResults) {
        if (t.status !== 'pending' && t.status !== 'todo') continue;
        const rel = path.relative(this.rootDir, file.testFilePath);
        skippedLines.push(`  ${rel}: ${[...t.ancestorTitles, t.title].join(' > ')}`);
      }
    }
    if (skippedLines.length > 0) {
      process.stdout.write(`\nskipped tests (${skippedLines.length}):\n${skippedLines.join('\n')}\n`);
    }
    const skipped = results.numPendingTests + results.numTodoTests;
    const failedSuites = results.numRuntimeErrorTestSuites; // suites that could not run count once each
    process.stdout.write(`\njest: ${results.numPassedTests} passed, ${results.numFailedTests + failedSuites} failed, ${skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
