#!/usr/bin/env python3
"""Free-form MetaQA questions, set D: a fourth, fresh hand-written phrase table
for testing a question planner on wording it was never tuned on.

    python3 benches/metaqa/freeform_d.py --kb $DATA/metaqa/kb.tsv \\
        --out benches/metaqa/freeform-d \\
        --avoid benches/metaqa/freeform/paths.tsv \\
        --avoid benches/metaqa/freeform-b/paths.tsv \\
        --avoid benches/metaqa/freeform-c/paths.tsv

PHRASES_D covers the same path types as freeform_c.py's PHRASES_C (every 1-hop
relation and inverse there, every 2-hop and 3-hop chain there), 6 phrasings
each, written the way different people ask: chatty requests and terse
fragments, commands, passive voice, relative clauses, questions that put the
topic late, step-by-step instructions for the longer chains ("take the cast
of {e}, find their other films, and ..."), with vocabulary such as filmmaker,
helmed, screenplay credit, lead actors, ensemble, dialogue language, release
year, premiered, subject matter, tag list. No phrasing repeats, or is a mere
word swap of, one in PHRASES, PHRASES_B, PHRASES_C or MetaQA's own templates.

Outputs have the same formats as set C's: OUT/bracketed.txt (topic in
[brackets]), OUT/plain.txt (no brackets), both `question<TAB>answer|answer`,
and OUT/paths.tsv (hop, bracketed question, topic, gold chain); 50 questions
per hop. The command line, KB loading, sampling (round-robin over path types,
answers excluding the topic), writing and reading of --avoid files are set
C's (freeform_c.py's run). --avoid may be given more than once or
as a comma list (pass sets A's, B's and C's paths.tsv, as above, to keep the
four sets' topics disjoint). Deterministic for a given KB, --seed and --avoid
files.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from freeform_c import run  # noqa: E402

# (path, phrasings); {e} is the topic entity.
PHRASES_D = [
    # 1-hop
    ("directed_by", [
        "I just watched {e} and loved it - who directed it?",
        "Which name follows 'directed by' in the credits of {e}?",
        "Direction on {e} was handled by which person?",
        "Whose job was it to direct {e}?",
        "looking up {e} - which director is credited",
        "{e}, directed by ...? fill in the name",
    ]),
    ("written_by", [
        "I'd love to read the script of {e}; who wrote it?",
        "Which screenwriter is responsible for the story of {e}?",
        "Name whoever is listed under 'written by' for {e}.",
        "Writing duties on {e} were done by whom?",
        "{e} - whose screenplay was that?",
        "In the credits of {e}, which writers are named?",
    ]),
    ("starred_actors", [
        "Tell me about the ensemble of {e}: which actors are in it?",
        "which familiar faces are in {e}? the actors, I mean",
        "Name the actors billed in {e}.",
        "Who appears on screen in {e}?",
        "Could you list the acting credits of {e}?",
        "the people playing the characters in {e} - who are they",
    ]),
    ("has_genre", [
        "Genre-wise, where does {e} sit?",
        "I'm writing a review of {e}; what genre should I file it under?",
        "Which genre is {e} usually described as?",
        "To which genre would critics assign {e}?",
        "what genre do people put {e} in",
        "Name the genre that {e} is an example of.",
    ]),
    ("release_year", [
        "When was {e} first shown to audiences? Just the year, please.",
        "Was {e} released recently or long ago? Tell me the year.",
        "The year {e} opened in theaters was...?",
        "Which year's crop of new releases included {e}?",
        "I need the premiere year of {e} for my list.",
        "For {e}, which calendar year marks its release?",
    ]),
    ("in_language", [
        "Tell me the language {e} was released in.",
        "The characters of {e} converse in what language?",
        "Name the language used for the dialogue in {e}.",
        "What language does the cast of {e} speak on screen?",
        "{e} was produced in which language?",
        "Tell me what language people talk in throughout {e}.",
    ]),
    ("directed_by_inv", [
        "I'm doing a {e} retrospective - which films did they direct?",
        "Which movies would be in a box set of {e}'s directorial work?",
        "Among all films, which ones did {e} direct?",
        "The films that {e} directed - list them.",
        "Has {e} directed anything I might know? list all their films as director",
        "Show me the directorial output of {e}.",
    ]),
    ("written_by_inv", [
        "I'm after movies with scripts by {e} - point me to them.",
        "As a screenwriter, {e} is credited on which films?",
        "List the films whose script {e} worked on.",
        "I like {e}'s writing; which movies can I watch that they wrote?",
        "Which films owe their script to {e}?",
        "the writing work of {e}: which films?",
    ]),
    ("starred_actors_inv", [
        "Where has {e} shown up on screen? name the films",
        "Which movies would I need to watch to see all of {e}'s acting work?",
        "Films starring {e}: which are they?",
        "I keep seeing {e} everywhere - what movies are they in?",
        "Which movies have given {e} a part to play?",
        "Which films did {e} take part in as a performer?",
    ]),
    ("has_tags", [
        "Describe {e}'s subject matter using its tags.",
        "Tags for {e}, please.",
        "Which descriptive tags go with {e}?",
        "The tag list for {e} - what's on it?",
        "Which subject-matter keywords belong to {e}?",
        "Show me every tag that {e} has received.",
    ]),
    ("has_tags_inv", [
        "What movies has someone tagged with {e}?",
        "The tag {e} has been given to which films?",
        "Films whose subject-matter tags mention {e} - which are they?",
        "Which films is the keyword {e} attached to?",
        "Looking for a movie with the tag {e}; what are the options?",
        "Movies sharing the tag {e}?",
    ]),
    # 2-hop
    ("directed_by -> directed_by_inv", [
        "Start from {e}, go to its director, and list that director's other films.",
        "{e} was great; did its director make any other movies? which ones",
        "Find me the rest of the films by {e}'s director.",
        "If I sort films by director, which others land in the same pile as {e}?",
        "Which titles come from the same director's filmography as {e}?",
        "What did {e}'s director go on to make, or make before it?",
    ]),
    ("directed_by_inv -> directed_by", [
        "When {e} directed a film with a partner, who was that partner?",
        "Who has directed side by side with {e}?",
        "Did {e} ever direct with someone else? who",
        "Which directors collaborated with {e} in directing a film?",
        "{e} and which other directors made films as a directing team?",
        "{e} hasn't always directed alone - who were the co-directors?",
    ]),
    ("directed_by_inv -> has_genre", [
        "Run through the movies {e} directed and name their genres.",
        "As director, which genres has {e} tried their hand at?",
        "Which genre labels apply to movies {e} has directed?",
        "The director {e}'s movies - what genres are they?",
        "Which genres are represented in the films that {e} helmed?",
        "For someone who likes {e}'s directing, what genres are their movies?",
    ]),
    ("directed_by_inv -> in_language", [
        "What dialogue languages do the films directed by {e} use?",
        "In terms of language, what are the movies {e} directed?",
        "Tell me which languages the characters speak in movies whose director is {e}.",
        "Was everything {e} directed made in one language? list the languages",
        "Director {e}: which languages are their films in?",
        "The language of each film {e} directed - what are they?",
    ]),
    ("directed_by_inv -> release_year", [
        "{e} has directed films; when did each premiere? years please",
        "The movies under {e}'s direction were released when? years only",
        "Which years does {e}'s directing filmography cover, going by release dates?",
        "Release dates (just years) for every film {e} directed",
        "For the films helmed by {e}, tell me their release years.",
        "When did audiences get each of {e}'s directorial films? the years, please",
    ]),
    ("directed_by_inv -> starred_actors", [
        "Who made up the casts of the films {e} directed?",
        "Whose acting can be seen in the films {e} helmed?",
        "Tell me the lead actors in {e}'s films as director.",
        "When {e} directs, which actors end up in the cast?",
        "I want a list of actors; the films are the ones {e} directed.",
        "In the cast credits of {e}'s directorial films, which actors are named?",
    ]),
    ("directed_by_inv -> written_by", [
        "Who held the screenplay credit on the movies {e} directed?",
        "Which writers supplied the scripts for {e}'s films as director?",
        "For each film directed by {e}, who wrote it?",
        "Which screenwriters have had a script directed by {e}?",
        "Who wrote the stories that {e} turned into films as director?",
        "Name the screenplay authors of films with {e} in the director credit.",
    ]),
    ("starred_actors -> starred_actors_inv", [
        "Follow the actors of {e} into their other work: which films?",
        "Which films did the stars of {e} make apart from it?",
        "Which films feature one or more of the actors who starred in {e}?",
        "Other films starring somebody from {e}?",
        "Through its actors, which other films is {e} linked to?",
        "Pick any actor from {e}: which other films have they been in?",
    ]),
    ("starred_actors_inv -> directed_by", [
        "Throughout {e}'s acting career, which directors were behind the camera?",
        "The movies featuring {e} - whose direction were they made under?",
        "Which filmmakers helmed movies with {e} in the ensemble?",
        "Who directed {e} in their films?",
        "For each movie {e} acted in, who was the director?",
        "If you check the credits of {e}'s films, which names are listed as director?",
    ]),
    ("starred_actors_inv -> has_genre", [
        "Across the films {e} acted in, which genres appear?",
        "The movies with {e} in the ensemble fall into what categories of genre?",
        "Which genres has {e} appeared on screen in?",
        "{e} shows up in movies of which genres?",
        "If I binge everything {e} acted in, which genres will I get?",
        "Genres represented among {e}'s acting credits?",
    ]),
    ("starred_actors_inv -> in_language", [
        "Sorting {e}'s acting filmography by language, which languages come out?",
        "Which languages are heard in films that include {e} in the ensemble?",
        "Tell me the original language of each movie {e} has been in.",
        "The movies starring {e}: what languages are spoken in them?",
        "Which languages were {e}'s movies shot in?",
        "Languages of movies with {e} in a role?",
    ]),
    ("starred_actors_inv -> release_year", [
        "Map out {e}'s acting career by year: when were their films released?",
        "List the years of the movies that have {e} in the ensemble.",
        "When did {e}'s films reach theaters? Give me the years.",
        "What release year goes with each film {e} has acted in?",
        "Years in which a movie with {e} in a role came out?",
        "I'm sorting {e}'s filmography by year; which release years will I have?",
    ]),
    ("starred_actors_inv -> starred_actors", [
        "Across their whole career, who have been {e}'s co-stars?",
        "When {e} makes a film, who else is in it acting?",
        "Who were {e}'s scene partners in the films they made? actors only",
        "Who are the other stars of the films {e} was in?",
        "Which other actors' names appear in the cast lists of {e}'s films?",
        "Apart from {e} themself, who acted in their films?",
    ]),
    ("starred_actors_inv -> written_by", [
        "Who gets screenplay credit on the films in {e}'s acting filmography?",
        "When {e} acts in a film, who has written it?",
        "Tell me who scripted the films with {e} in the ensemble.",
        "The films that cast {e} were written by which screenwriters?",
        "If I look at {e}'s films, which writers are credited?",
        "Name every screenwriter whose film had {e} in the cast.",
    ]),
    ("written_by -> written_by_inv", [
        "Whoever wrote {e}: name their other films.",
        "Find the rest of the movies written by {e}'s screenwriter.",
        "Other films with the same writing credit as {e}?",
        "{e} had a writer; what else did that person write for the screen?",
        "Grouping films by screenwriter, which others are in {e}'s group?",
        "The screenplay credit on {e} - which other films does that writer have?",
    ]),
    ("written_by_inv -> directed_by", [
        "Whose direction did {e}'s screenplays end up under?",
        "Which directors were paired with the writer {e}?",
        "For the films with {e}'s screenplay credit, who directed?",
        "The movies written by {e} had which filmmakers in the director's chair?",
        "Directors of the films whose screenplay came from {e}?",
        "I like {e}'s writing; which directors have made films out of it?",
    ]),
    ("written_by_inv -> has_genre", [
        "Going by their writing credits, which genres does {e} cover?",
        "{e} is a writer of what kinds of movies? give the genres",
        "Tell me the genre of each film {e} has a screenplay credit on.",
        "Among movies {e} has written, what genres are there?",
        "Which genres has {e} written screenplays in?",
        "If I read every script {e} wrote, which genres would I be reading?",
    ]),
    ("written_by_inv -> in_language", [
        "Which dialogue languages appear in the films {e} wrote?",
        "Name the languages a fan of {e}'s screenplays would need to follow their films.",
        "For each film with a screenplay by {e}, which language is it in?",
        "If a film has {e} as writer, what language is it in? give all of them",
        "Original languages of the movies credited to writer {e}?",
        "I want to watch something {e} wrote - what languages could it be in?",
    ]),
    ("written_by_inv -> release_year", [
        "Chronologically, which years had a release of a film written by {e}?",
        "When did the movies with a screenplay by {e} reach theaters? years only",
        "{e}'s career as a screenwriter - which years had new films come out?",
        "{e} has writing credits on films from which release years?",
        "In what years did {e} see their scripts premiere?",
        "Sort {e}'s written films by year - which years appear?",
    ]),
    ("written_by_inv -> starred_actors", [
        "Which actors have spoken dialogue written by {e}?",
        "Name the stars of films that carry {e}'s screenplay credit.",
        "For each movie {e} wrote, who was in the cast?",
        "{e} writes; who acts in those films?",
        "Tell me the performers who appeared in movies {e} has a screenplay credit on.",
        "Whose faces are on screen in the films written by {e}? the actors, I mean",
    ]),
    ("written_by_inv -> written_by", [
        "When {e} wrote a film with someone else, who was it?",
        "Who shared screenplay duties with {e}?",
        "Did {e} ever write a film as part of a team? who else was on it",
        "Which writers formed a writing team with {e}?",
        "The movies {e} wrote were co-written by whom?",
        "Whose names join {e}'s in the 'written by' credit?",
    ]),
    # 3-hop
    ("directed_by -> directed_by_inv -> has_genre", [
        "Name the genres of whatever else {e}'s director has directed.",
        "Start from {e}, find its director, then their other films: which genres?",
        "{e}'s director helmed other films too. Genres?",
        "If I go on to watch more films by the director of {e}, which genres will I run into?",
        "In what genres did the filmmaker responsible for {e} make their other movies?",
        "Which genres come up when you look beyond {e} at its director's other films?",
    ]),
    ("directed_by -> directed_by_inv -> in_language", [
        "What dialogue languages do the other films directed by {e}'s filmmaker use?",
        "Go from {e} to its director and on to their other films: which languages are those in?",
        "What languages did the person who directed {e} make their other films in?",
        "Other films by the director of {e} - name the language of each.",
        "Tell me the original language of every other film made by whoever directed {e}.",
        "{e}'s director has a body of other work; what languages is it in?",
    ]),
    ("directed_by -> directed_by_inv -> release_year", [
        "The filmmaker behind {e} released other movies in which years?",
        "Going by release year, when did {e}'s director's other films come out?",
        "I want to know when {e}'s director was active: the release years of their other films.",
        "For every other movie directed by the director of {e}, what's the release year?",
        "Years in which whoever directed {e} put out a different film?",
        "The director responsible for {e} had other films released when? years only",
    ]),
    ("directed_by -> directed_by_inv -> starred_actors", [
        "Who acted under the director of {e} in films other than that one?",
        "Which lead actors appear in the remaining work of {e}'s director?",
        "{e} had a director; which actors did that director work with on different films?",
        "Find who directed {e}, then name the actors in that person's other films.",
        "Casts of the other movies helmed by the director of {e}?",
        "On the other films by the director of {e}, which actors were in front of the camera?",
    ]),
    ("directed_by -> directed_by_inv -> written_by", [
        "Screenwriters behind the rest of {e}'s director's films?",
        "The director of {e} directed other films too; who were their screenwriters?",
        "Name, please, whoever wrote the other films {e}'s director made.",
        "On the other films {e}'s director made, which writers got screenplay credit?",
        "Who supplied scripts to the filmmaker of {e} for their other films?",
        "Everything else {e}'s director directed - who wrote it?",
    ]),
    ("starred_actors -> starred_actors_inv -> directed_by", [
        "Which filmmakers have had an ensemble member of {e} in another of their films?",
        "The lead actors of {e} have been in other movies - helmed by which filmmakers?",
        "Take the cast of {e}, find their other films, and tell me who directed them.",
        "Directors of films that {e}'s stars also acted in?",
        "For the other movies that feature actors from {e}, who was the director?",
        "The people who starred in {e} acted in other films directed by whom?",
    ]),
    ("starred_actors -> starred_actors_inv -> has_genre", [
        "{e}'s stars elsewhere: which genres?",
        "Which genres have {e}'s lead actors worked in on other films?",
        "Genres of other movies with someone from the {e} ensemble?",
        "Any actor from {e} - in which genres are their other films?",
        "For each other film an actor of {e} appeared in, name the genre.",
        "Which genres come up across the careers of {e}'s cast beyond this film?",
    ]),
    ("starred_actors -> starred_actors_inv -> in_language", [
        "Which languages do the other movies of {e}'s lead actors use for dialogue?",
        "Trace {e}'s ensemble to their other films; what languages are those in?",
        "Take each actor in {e} and list the languages of the other films they acted in.",
        "Languages of the other films that {e}'s ensemble appeared in?",
        "Other films with a cast member of {e}: what languages are they in?",
        "Which original languages show up among other films starring the cast of {e}?",
    ]),
    ("starred_actors -> starred_actors_inv -> release_year", [
        "Release years, please, for the other movies in which {e}'s lead actors appear.",
        "Name the years when one of {e}'s actors had a different film released.",
        "Take the actors of {e}: what years were their other films released?",
        "A cast member of {e} also appears in other films - from which years are those?",
        "The stars of {e} acted in other movies; which years did those come out?",
        "The performers of {e}: what release years do their other films have?",
    ]),
    ("starred_actors -> starred_actors_inv -> written_by", [
        "Trace the actors of {e} to their other films and name those films' writers.",
        "Whose scripts were used for other movies with an ensemble member of {e}?",
        "Writers of the other films featuring {e}'s stars?",
        "Who has a screenplay credit on the other films of {e}'s lead actors?",
        "Which writers are credited on the other films of the people who acted in {e}?",
        "What screenwriters wrote films that also star actors from {e}?",
    ]),
    ("written_by -> written_by_inv -> directed_by", [
        "Start from {e}, find its writer, then the directors of that writer's other films.",
        "The writer of {e} has other screenplays on film; who was in the director's chair?",
        "For each other film by the screenwriter of {e}, who was the director?",
        "Which filmmakers have helmed a different film written by the person who wrote {e}?",
        "Whoever has screenplay credit on {e} wrote other films as well; name their directors.",
        "Who directed the rest of {e}'s screenwriter's output?",
    ]),
    ("written_by -> written_by_inv -> has_genre", [
        "Which genres cover the other screenplays by the author of {e}'s script?",
        "Go to the writer of {e}, then their other films: what genres?",
        "Take whoever wrote {e}: what genres are the rest of their films?",
        "Is the writer of {e} a one-genre writer? list the genres of their other films",
        "If I watched the other movies written by {e}'s screenwriter, which genres would I see?",
        "Other films penned by whoever wrote {e} belong to what genres?",
    ]),
    ("written_by -> written_by_inv -> in_language", [
        "What dialogue language does each of the other films from {e}'s writer have?",
        "Find the writer of {e} and name the languages of the other films they wrote.",
        "Across the other films from {e}'s writer, which languages are spoken?",
        "Languages of the other films with a screenplay by {e}'s writer?",
        "The languages, please, of all the other films that {e}'s writer wrote.",
        "{e}'s screenplay credit belongs to someone whose other films are in what languages?",
    ]),
    ("written_by -> written_by_inv -> release_year", [
        "Which release years belong to the writer of {e}'s other screenplays?",
        "{e}'s screenwriter, other films, release years?",
        "Line up the other films by the screenwriter of {e} by release date: which years appear?",
        "Release years of the other films scripted by the person behind {e}'s screenplay?",
        "For each other film written by the writer of {e}, give me the year it came out.",
        "Which years did the screenwriter of {e} see a different film of theirs premiere?",
    ]),
    ("written_by -> written_by_inv -> starred_actors", [
        "Who acted in whatever else the writer of {e} wrote?",
        "Name the lead actors in the other films whose screenplay {e}'s writer wrote.",
        "Take the screenwriter of {e}, find their other films, and name the actors.",
        "Who made up the ensembles of the other films written by the person who wrote {e}?",
        "Once the writer of {e} is known, which actors appear in their other films?",
        "Whose acting appears in the other films from {e}'s screenwriter?",
    ]),
]


def main():
    run(PHRASES_D, "freeform_d.py", __doc__)

if __name__ == "__main__":
    main()
