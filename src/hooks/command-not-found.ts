import type {Hook} from '@oclif/core';
import {quoteSh} from '../core/text/quote.js';
import {closest} from '../core/text/suggest.js';

/**
 * oclif's own "command X:y not found" names the command the way oclif stores it
 * (with a colon) and says nothing about what to do. Say it as the user typed it, and
 * suggest the command a typo most likely meant (`cudaenv isntall 12.4`).
 */
const hook: Hook<'command_not_found'> = async function (options) {
  const typed = options.id.split(':');
  const known = options.config.commands.flatMap((c) => [c.id, ...c.aliases]).filter((id) => !id.includes(':'));
  // `cudaenv ls extra` reaches here as "ls:extra": the first word is a command, the rest are arguments it does not take.
  const command = known.includes(typed[0]!) ? typed[0] : undefined;
  let message: string;
  if (command) {
    message = `cudaenv: ${command} does not take the argument ${JSON.stringify(typed.slice(1).join(' '))}\nSee \`cudaenv ${command} --help\`.`;
  } else {
    const guess = closest(typed[0]!, known);
    const rest = [...typed.slice(1), ...(options.argv ?? [])].map((a) => quoteSh(a));
    message = `cudaenv: there is no command ${JSON.stringify(typed[0])}\n${guess ? `Did you mean \`${['cudaenv', guess, ...rest].join(' ')}\`? ` : ''}See \`cudaenv --help\` for the list of commands.`;
  }
  process.stderr.write(`${message}\n`);
  this.exit(2);
};

export default hook;
