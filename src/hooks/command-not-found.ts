import type {Hook} from '@oclif/core';

/**
 * oclif's own "command X:y not found" names the command the way oclif stores it
 * (with a colon) and says nothing about what to do. Say it as the user typed it.
 */
const hook: Hook<'command_not_found'> = async function (options) {
  const typed = options.id.split(':');
  const known = options.config.commandIDs;
  // `cudaenv ls extra` reaches here as "ls:extra": the first word is a command, the rest are arguments it does not take.
  const command = known.includes(typed[0]!) ? typed[0] : undefined;
  const message = command
    ? `cudaenv: ${command} does not take the argument ${JSON.stringify(typed.slice(1).join(' '))}\nSee \`cudaenv ${command} --help\`.`
    : `cudaenv: there is no command ${JSON.stringify(typed.join(' '))}\nSee \`cudaenv --help\` for the list of commands.`;
  process.stderr.write(`${message}\n`);
  this.exit(2);
};

export default hook;
