def pipeline_split(): pass
def placements(): pass
def schedule_csv(): pass
